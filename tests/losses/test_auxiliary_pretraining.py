import shutil

import pytest
import torch
from datasets import Dataset

from st_infocse import losses
from st_infocse.modeling import TokenMasker
from st_infocse.training import AuxiliaryStateCallback

from ..conftest import random_sentences


def test_stage_one_trains_and_hands_over_to_stage_two(make_model, run_trainer, tmp_path):
    model = make_model()
    stage1 = losses.AuxiliaryPretrainingLoss(model, k=2, n=2)
    fusion = {k: v.clone() for k, v in stage1.decoder.fusion.state_dict().items()}
    layer0 = model[0].auto_model.encoder.layer[0].output.dense.weight.detach().clone()
    trainer = run_trainer(
        model, stage1, Dataset.from_dict({"text": random_sentences(48)}), steps=3, callbacks=[AuxiliaryStateCallback(stage1)]
    )
    logged = trainer.state.log_history[0]
    assert {"mlm", "aux", "cmlm_loss"} <= set(logged)
    # Both MLM terms train the shared lower layers; the fusion layers learn too.
    assert not torch.equal(layer0, model[0].auto_model.encoder.layer[0].output.dense.weight)
    assert any(not torch.equal(v, stage1.decoder.fusion.state_dict()[k]) for k, v in fusion.items())

    stage1.save_decoder(tmp_path / "decoder")
    model.save(str(tmp_path / "model"))
    stage2 = losses.InfoCSELoss(model, decoder=tmp_path / "decoder")
    # The stage-2 frozen copy starts from the encoder's stage-1 lower layers, the fusion layers from stage 1.
    encoder = model[0].auto_model.state_dict()
    for key, value in stage2.decoder.lower.state_dict().items():
        assert torch.equal(value, encoder[key]), key
    for key, value in stage1.decoder.fusion.state_dict().items():
        assert torch.equal(value, stage2.decoder.fusion.state_dict()[key])


def test_hook_reads_the_kth_layer(make_model, sentences):
    model = make_model()
    model.eval()
    stage1 = losses.AuxiliaryPretrainingLoss(model, k=1)
    captured = []
    handle = stage1._parts[0].layers[0].register_forward_hook(lambda m, a, o: captured.append(o))
    try:
        out = stage1([model.preprocess(sentences[:4])])
    finally:
        handle.remove()
    assert len(captured) == 1 and set(out) == {"mlm", "aux"}
    assert stage1.get_config_dict()["k"] == 1


# ------------------------------------------------------------------------------------ Condenser's head and masking


def _embeddings(model) -> torch.nn.Parameter:
    return model[0].auto_model.get_input_embeddings().weight


def test_head_is_tied_to_the_word_embeddings_by_default(make_model):
    from st_infocse.modeling.masking import WholeWordMasker
    from st_infocse.training import auxiliary_state_dict

    model = make_model()
    stage1 = losses.AuxiliaryPretrainingLoss(model)
    projection = stage1.decoder.head.decoder.weight
    assert projection is _embeddings(model) and projection.data_ptr() == _embeddings(model).data_ptr()
    assert isinstance(stage1.masker, WholeWordMasker)
    config = stage1.get_config_dict()
    assert config["tie_head"] is True and config["masking"] == "whole_word"
    # Listed once, under the model's name; left to the model's checkpoint by the auxiliary state.
    names = [name for name, p in stage1.named_parameters() if p is projection]
    assert len(names) == 1 and names[0].startswith("model.") and names[0].endswith("word_embeddings.weight")
    assert "decoder.head.decoder.weight" not in auxiliary_state_dict(stage1)


def test_untied_head_and_token_masking_on_request(make_model):
    from st_infocse.training import auxiliary_state_dict

    model = make_model()
    stage1 = losses.AuxiliaryPretrainingLoss(model, tie_head=False, masking="token")
    projection = stage1.decoder.head.decoder.weight
    assert projection is not _embeddings(model) and projection.data_ptr() != _embeddings(model).data_ptr()
    assert isinstance(stage1.masker, TokenMasker)
    assert "decoder.head.decoder.weight" in auxiliary_state_dict(stage1)
    with pytest.raises(ValueError, match="masking"):
        losses.AuxiliaryPretrainingLoss(model, masking="span")


def test_both_mlm_terms_train_the_embeddings_through_a_tied_head(make_model, sentences):
    """Rows of tokens absent from the masked batch get a gradient only through the head's softmax."""
    batch = make_model().preprocess(sentences[:8])
    rows = {}
    for tie in (True, False):
        model = make_model()
        stage1 = losses.AuxiliaryPretrainingLoss(model, k=2, tie_head=tie)
        torch.manual_seed(0)
        masked_ids, labels = stage1.masker(batch["input_ids"], batch["attention_mask"])
        stage1.masker = lambda ids, mask, fixed=(masked_ids, labels): fixed
        out = stage1([dict(batch)])
        (out["mlm"] + out["aux"]).backward()
        absent = ~torch.isin(torch.arange(_embeddings(model).shape[0]), masked_ids)
        rows[tie] = _embeddings(model).grad[absent].abs().sum().item()
    assert rows[True] > 0 and rows[False] == 0


def test_saved_decoder_is_untied_and_independent_of_the_encoder(make_model, tmp_path):
    from st_infocse.modeling import AuxiliaryDecoder

    model = make_model()
    stage1 = losses.AuxiliaryPretrainingLoss(model, k=2)
    with torch.no_grad():
        _embeddings(model).add_(0.5)  # as if stage 1 had trained them
    at_save = _embeddings(model).detach().clone()
    stage1.save_decoder(tmp_path / "decoder")
    in_memory = stage1.untied_decoder()
    with torch.no_grad():
        _embeddings(model).mul_(2.0)  # training goes on after the save
    saved = AuxiliaryDecoder.from_pretrained(tmp_path / "decoder")
    for decoder in (saved, in_memory):
        assert torch.equal(decoder.head.decoder.weight, at_save)
        assert decoder.head.decoder.weight.data_ptr() != _embeddings(model).data_ptr()
    # Stage 1 itself stays tied, and stage 2 trains its own copy.
    assert stage1.decoder.head.decoder.weight is _embeddings(model)
    stage2 = losses.InfoCSELoss(model, decoder=tmp_path / "decoder")
    assert stage2.decoder.head.decoder.weight.data_ptr() != _embeddings(model).data_ptr()


def test_trainer_step_with_the_tied_head(make_model, run_trainer):
    model = make_model()
    stage1 = losses.AuxiliaryPretrainingLoss(model, k=2)
    before = _embeddings(model).detach().clone()
    # An own learning rate for the auxiliary modules (the CLI's --aux_learning_rate) must not claim the embeddings.
    trainer = run_trainer(
        model,
        stage1,
        Dataset.from_dict({"text": random_sentences(32)}),
        steps=2,
        learning_rate_mapping={r"^(?!model\.)": 1e-2},
    )
    seen = [id(p) for group in trainer.optimizer.param_groups for p in group["params"]]
    assert len(seen) == len(set(seen)), "a parameter is in the optimizer twice"
    projection = stage1.decoder.head.decoder.weight
    assert seen.count(id(projection)) == 1
    (group,) = [g for g in trainer.optimizer.param_groups if any(p is projection for p in g["params"])]
    assert group.get("initial_lr", group["lr"]) == trainer.args.learning_rate != 1e-2
    assert projection is _embeddings(model) and not torch.equal(before, projection)


def test_stage_one_resume_matches_an_uninterrupted_run(make_model, run_trainer, tmp_path):
    from st_infocse.training import auxiliary_state_dict

    def train(output_dir, resume=None):
        model = make_model(seed=0)
        stage1 = losses.AuxiliaryPretrainingLoss(model, k=2)
        run_trainer(
            model,
            stage1,
            Dataset.from_dict({"text": random_sentences(64)}),
            steps=4,
            callbacks=[AuxiliaryStateCallback(stage1)],
            resume=resume,
            output_dir=str(output_dir),
            save_strategy="steps",
            save_steps=2,
        )
        return model, stage1

    full_model, full = train(tmp_path / "full")
    shutil.copytree(tmp_path / "full" / "checkpoint-2", tmp_path / "killed" / "checkpoint-2")
    model, resumed = train(tmp_path / "killed", resume=True)
    # Restoring the model's weights in place keeps the head tied to them.
    assert resumed.decoder.head.decoder.weight is _embeddings(model)
    for (key, a), b in zip(full_model.state_dict().items(), model.state_dict().values(), strict=True):
        assert torch.allclose(a, b, atol=1e-6), key
    full_state, resumed_state = auxiliary_state_dict(full), auxiliary_state_dict(resumed)
    assert full_state.keys() == resumed_state.keys()
    for key, value in full_state.items():
        assert torch.allclose(value, resumed_state[key], atol=1e-6), key
