import os

# TensorFlow reads its C++ log level once, when it is first imported: set here, before any
# module of the suite imports it, so that commands print no C++ start-up noise such as
# "failed call to cuInit" on a machine without a GPU (errors still reach Python; a user's own
# setting wins).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
