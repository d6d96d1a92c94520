"""BibTeX of the papers behind the losses, for the model cards sentence-transformers writes (``loss.citation``)."""

SIMCSE_CITATION = """
@inproceedings{gao2021simcse,
    title={{SimCSE}: Simple Contrastive Learning of Sentence Embeddings},
    author={Gao, Tianyu and Yao, Xingcheng and Chen, Danqi},
    booktitle={Empirical Methods in Natural Language Processing (EMNLP)},
    year={2021}
}
"""

INFORMIN_CITATION = """
@inproceedings{chen2022informin,
    title={An Information Minimization Based Contrastive Learning Model for Unsupervised Sentence Embeddings Learning},
    author={Chen, Shaobin and Zhou, Jie and Sun, Yuling and He, Liang},
    booktitle={Proceedings of the 29th International Conference on Computational Linguistics (COLING)},
    year={2022}
}
"""

INFOCSE_CITATION = """
@inproceedings{wu2022infocse,
    title={{InfoCSE}: Information-aggregated Contrastive Learning of Sentence Embeddings},
    author={Wu, Xing and Gao, Chaochen and Lin, Zijia and Han, Jizhong and Wang, Zhongyuan and Hu, Songlin},
    booktitle={Findings of the Association for Computational Linguistics: EMNLP 2022},
    year={2022}
}
"""

CMLM_CSE_CITATION = """
@article{zhang2023cmlmcse,
    title={{CMLM-CSE}: Based on Conditional {MLM} Contrastive Learning for Sentence Embeddings},
    author={Zhang, Wei and Chen, Xu},
    journal={arXiv preprint arXiv:2306.09594},
    year={2023}
}
"""

IDC_CITATION = """
@misc{yang2022idc,
    title={A Mutually Reinforced Framework for Pretrained Sentence Embeddings},
    author={Yang, Junhan and Liu, Zheng and Xiao, Shitao and Lian, Jianxun and Wu, Lijun and Lian, Defu and Sun, Guangzhong and Xie, Xing},
    year={2022}
}
"""
