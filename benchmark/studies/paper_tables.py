"""Published numbers the report sets beside a study's own.

PAPER002_TABLE1_MIG: Zietlow et al. 2021 (paper 002) Table 1, MIG mean and std over 10
seeds at dlib's 300k steps, keyed by the suite's (model, dataset, variant) names. The
paper prints no AE number on modified or noisy data; those cells are absent.
"""

PAPER002_TABLE1_MIG = {
    ("ae", "dsprites", "original"): (0.09, 0.06),
    ("beta_vae", "dsprites", "original"): (0.23, 0.08),
    ("beta_vae", "dsprites", "modified"): (0.07, 0.09),
    ("beta_vae", "dsprites", "noisy"): (0.14, 0.07),
    ("factor_vae", "dsprites", "original"): (0.27, 0.11),
    ("factor_vae", "dsprites", "modified"): (0.20, 0.12),
    ("factor_vae", "dsprites", "noisy"): (0.16, 0.08),
    ("beta_tcvae", "dsprites", "original"): (0.25, 0.08),
    ("beta_tcvae", "dsprites", "modified"): (0.14, 0.10),
    ("beta_tcvae", "dsprites", "noisy"): (0.20, 0.04),
    ("slowvae", "dsprites", "original"): (0.39, 0.08),
    ("slowvae", "dsprites", "modified"): (0.27, 0.08),
    ("slowvae", "dsprites", "noisy"): (0.37, 0.09),
    ("pcl", "dsprites", "original"): (0.21, 0.03),
    ("pcl", "dsprites", "modified"): (0.24, 0.07),
    ("pcl", "dsprites", "noisy"): (0.24, 0.07),
    ("ae", "shapes3d", "original"): (0.06, 0.03),
    ("beta_vae", "shapes3d", "original"): (0.60, 0.31),
    ("beta_vae", "shapes3d", "modified"): (0.09, 0.14),
    ("beta_vae", "shapes3d", "noisy"): (0.66, 0.05),
    ("factor_vae", "shapes3d", "original"): (0.27, 0.18),
    ("factor_vae", "shapes3d", "modified"): (0.07, 0.05),
    ("factor_vae", "shapes3d", "noisy"): (0.33, 0.20),
    ("beta_tcvae", "shapes3d", "original"): (0.58, 0.20),
    ("beta_tcvae", "shapes3d", "modified"): (0.24, 0.16),
    ("beta_tcvae", "shapes3d", "noisy"): (0.60, 0.11),
    ("slowvae", "shapes3d", "original"): (0.53, 0.19),
    ("slowvae", "shapes3d", "modified"): (0.13, 0.08),
    ("slowvae", "shapes3d", "noisy"): (0.60, 0.10),
    ("pcl", "shapes3d", "original"): (0.44, 0.06),
    ("pcl", "shapes3d", "modified"): (0.47, 0.08),
    ("pcl", "shapes3d", "noisy"): (0.40, 0.07),
}
