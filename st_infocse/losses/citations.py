"""BibTeX of the papers behind the losses, for the model cards sentence-transformers writes (``loss.citation``);
each entry carries its arXiv identifier and address, checked against the paper's arXiv page."""

SIMCSE_CITATION = """
@inproceedings{gao2021simcse,
    title={{SimCSE}: Simple Contrastive Learning of Sentence Embeddings},
    author={Gao, Tianyu and Yao, Xingcheng and Chen, Danqi},
    booktitle={Empirical Methods in Natural Language Processing (EMNLP)},
    year={2021},
    eprint={2104.08821},
    archivePrefix={arXiv},
    url={https://arxiv.org/abs/2104.08821}
}
"""

INFORMIN_CITATION = """
@inproceedings{chen2022informin,
    title={An Information Minimization Based Contrastive Learning Model for Unsupervised Sentence Embeddings Learning},
    author={Chen, Shaobin and Zhou, Jie and Sun, Yuling and He, Liang},
    booktitle={Proceedings of the 29th International Conference on Computational Linguistics (COLING)},
    year={2022},
    eprint={2209.10951},
    archivePrefix={arXiv},
    url={https://arxiv.org/abs/2209.10951}
}
"""

INFOCSE_CITATION = """
@inproceedings{wu2022infocse,
    title={{InfoCSE}: Information-aggregated Contrastive Learning of Sentence Embeddings},
    author={Wu, Xing and Gao, Chaochen and Lin, Zijia and Han, Jizhong and Wang, Zhongyuan and Hu, Songlin},
    booktitle={Findings of the Association for Computational Linguistics: EMNLP 2022},
    year={2022},
    eprint={2210.06432},
    archivePrefix={arXiv},
    url={https://arxiv.org/abs/2210.06432}
}
"""

CMLM_CSE_CITATION = """
@article{zhang2023cmlmcse,
    title={{CMLM-CSE}: Based on Conditional {MLM} Contrastive Learning for Sentence Embeddings},
    author={Zhang, Wei and Chen, Xu},
    journal={arXiv preprint arXiv:2306.09594},
    year={2023},
    eprint={2306.09594},
    archivePrefix={arXiv},
    url={https://arxiv.org/abs/2306.09594}
}
"""

IDC_CITATION = """
@misc{yang2022idc,
    title={A Mutually Reinforced Framework for Pretrained Sentence Embeddings},
    author={Yang, Junhan and Liu, Zheng and Xiao, Shitao and Lian, Jianxun and Wu, Lijun and Lian, Defu and Sun, Guangzhong and Xie, Xing},
    year={2022},
    eprint={2202.13802},
    archivePrefix={arXiv},
    url={https://arxiv.org/abs/2202.13802}
}
"""

ICT_CITATION = """
@inproceedings{lee2019latent,
    title={Latent Retrieval for Weakly Supervised Open Domain Question Answering},
    author={Lee, Kenton and Chang, Ming-Wei and Toutanova, Kristina},
    booktitle={Proceedings of the 57th Annual Meeting of the Association for Computational Linguistics},
    pages={6086--6096},
    year={2019},
    eprint={1906.00300},
    archivePrefix={arXiv},
    url={https://arxiv.org/abs/1906.00300}
}
"""

GPL_CITATION = """
@inproceedings{wang2022gpl,
    title={{GPL}: Generative Pseudo Labeling for Unsupervised Domain Adaptation of Dense Retrieval},
    author={Wang, Kexin and Thakur, Nandan and Reimers, Nils and Gurevych, Iryna},
    booktitle={Proceedings of the 2022 Conference of the North American Chapter of the Association for Computational Linguistics: Human Language Technologies},
    pages={2345--2360},
    year={2022},
    eprint={2112.07577},
    archivePrefix={arXiv},
    url={https://arxiv.org/abs/2112.07577}
}
"""
