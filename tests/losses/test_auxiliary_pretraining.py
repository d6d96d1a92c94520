import torch
from datasets import Dataset

from st_infocse import losses
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
