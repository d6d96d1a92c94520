"""Unsupervised sentence-embedding objectives (InfoCSE, CMLM-CSE, InforMin-CL, IDC) for sentence-transformers."""

__version__ = "0.1.0"
