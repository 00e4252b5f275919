from benchmark.core import quiet_start

quiet_start.install()            # before any module of the suite imports TensorFlow
