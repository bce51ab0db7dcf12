"""nn from Python against torch 1.13: layers with weights copied from torch modules
(forward and backward), Module registration and state_dict, losses, repr."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as enn
import ember.nn.functional as EF
from conftest import assert_close, to_ember, to_torch


def copy_weights(emod, tmod):
    sd = {k: to_ember(v) for k, v in tmod.state_dict().items()}
    emod.load_state_dict(sd)


def check_layer(emod, tmod, *shapes, int_input=None, rtol=1e-4, atol=1e-5):
    copy_weights(emod, tmod)
    assert list(emod.state_dict().keys()) == list(tmod.state_dict().keys())
    if int_input is not None:
        arr = int_input
        ex, tx = ember.from_numpy(arr.copy()), torch.from_numpy(arr.copy())
        ins = [(ex, tx)]
    else:
        ins = []
        for s in shapes:
            a = np.random.randn(*s).astype(np.float32)
            ins.append((ember.from_numpy(a.copy()).requires_grad_(), torch.from_numpy(a.copy()).requires_grad_()))
    ey = emod(*[e for e, _ in ins])
    ty = tmod(*[t for _, t in ins])
    assert_close(ey, ty, rtol, atol)
    w = np.random.randn(*ty.shape).astype(np.float32)
    (ey * ember.from_numpy(w)).sum().backward()
    (ty * torch.from_numpy(w)).sum().backward()
    for (en, ep), (tn, tp) in zip(emod.named_parameters(), tmod.named_parameters()):
        assert en == tn
        assert_close(ep.grad, tp.grad, rtol, atol)
    if int_input is None:
        for e, t in ins:
            assert_close(e.grad, t.grad, rtol, atol)


def test_linear_conv_pool_layers_match_torch():
    check_layer(enn.Linear(5, 3), torch.nn.Linear(5, 3), (4, 5))
    check_layer(enn.Linear(5, 3, bias=False), torch.nn.Linear(5, 3, bias=False), (2, 7, 5))
    check_layer(enn.Conv2d(3, 4, 3, padding=1, stride=2), torch.nn.Conv2d(3, 4, 3, padding=1, stride=2), (2, 3, 9, 9))
    check_layer(enn.Conv1d(2, 4, 3, dilation=2), torch.nn.Conv1d(2, 4, 3, dilation=2), (2, 2, 11))
    check_layer(enn.ConvTranspose2d(3, 2, 3, stride=2), torch.nn.ConvTranspose2d(3, 2, 3, stride=2), (1, 3, 5, 5))
    check_layer(enn.Sequential(enn.MaxPool2d(2), enn.AvgPool2d(2), enn.Flatten()),
                torch.nn.Sequential(torch.nn.MaxPool2d(2), torch.nn.AvgPool2d(2), torch.nn.Flatten()), (2, 3, 8, 8))
    check_layer(enn.AdaptiveAvgPool2d((2, 3)), torch.nn.AdaptiveAvgPool2d((2, 3)), (2, 3, 7, 9))
    check_layer(enn.Bilinear(3, 4, 2), torch.nn.Bilinear(3, 4, 2), (5, 3), (5, 4))


def test_normalization_layers_match_torch_in_train_and_eval():
    for emod, tmod, shape in ((enn.BatchNorm2d(3), torch.nn.BatchNorm2d(3), (4, 3, 5, 5)),
                              (enn.BatchNorm1d(3), torch.nn.BatchNorm1d(3), (6, 3)),
                              (enn.LayerNorm(5), torch.nn.LayerNorm(5), (2, 4, 5)),
                              (enn.GroupNorm(2, 4), torch.nn.GroupNorm(2, 4), (3, 4, 6))):
        check_layer(emod, tmod, shape)
        if isinstance(emod, enn.BatchNorm2d) or isinstance(emod, enn.BatchNorm1d):
            assert_close(emod.running_mean, tmod.running_mean, 1e-5, 1e-6)
            assert_close(emod.running_var, tmod.running_var, 1e-5, 1e-6)
            assert emod.num_batches_tracked.item() == tmod.num_batches_tracked.item() == 1
            emod.eval()
            tmod.eval()
            a = np.random.randn(*shape).astype(np.float32)
            assert_close(emod(ember.from_numpy(a)), tmod(torch.from_numpy(a)), 1e-5, 1e-5)


def test_embedding_activations_dropout():
    idx = np.array([[0, 3, 9], [2, 2, 1]], dtype=np.int64)
    check_layer(enn.Embedding(10, 4, padding_idx=2), torch.nn.Embedding(10, 4, padding_idx=2), int_input=idx)
    a = np.random.randn(3, 5).astype(np.float32)
    ea, ta = ember.from_numpy(a), torch.from_numpy(a)
    for en, tn in (("ReLU", "ReLU"), ("GELU", "GELU"), ("SiLU", "SiLU"), ("Tanh", "Tanh"), ("Sigmoid", "Sigmoid"),
                   ("ELU", "ELU"), ("Softplus", "Softplus"), ("Hardtanh", "Hardtanh"), ("Mish", "Mish"),
                   ("Hardswish", "Hardswish"), ("LogSigmoid", "LogSigmoid")):
        assert_close(getattr(enn, en)()(ea), getattr(torch.nn, tn)()(ta), 1e-5, 1e-6)
    assert_close(enn.LeakyReLU(0.2)(ea), torch.nn.LeakyReLU(0.2)(ta))
    assert_close(enn.Softmax(dim=1)(ea), torch.nn.Softmax(dim=1)(ta))
    assert_close(EF.gelu(ea, approximate="tanh"), torch.nn.functional.gelu(ta, approximate="tanh"), 1e-5, 1e-6)
    assert_close(EF.normalize(ea), torch.nn.functional.normalize(ta), 1e-5, 1e-6)
    d = enn.Dropout(0.5)
    y = d(ember.ones(1000))
    zeros = (y == 0).sum().item()
    assert 380 < zeros < 620 and set(y.unique().tolist()) <= {0.0, 2.0}
    d.eval()
    assert d(ember.ones(10)).tolist() == [1.0] * 10


@pytest.mark.parametrize("name,targets", [("CrossEntropyLoss", "class"), ("NLLLoss", "class"), ("MSELoss", "same"),
                                          ("L1Loss", "same"), ("SmoothL1Loss", "same"), ("HuberLoss", "same"),
                                          ("BCEWithLogitsLoss", "prob"), ("KLDivLoss", "prob")])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_match_torch_forward_and_backward(name, targets, reduction):
    a = np.random.randn(4, 5).astype(np.float32)
    if name == "NLLLoss":
        a = np.log(np.exp(a) / np.exp(a).sum(1, keepdims=True)).astype(np.float32)
    t = {"class": np.array([1, 0, 4, 2]), "same": np.random.randn(4, 5).astype(np.float32),
         "prob": np.random.rand(4, 5).astype(np.float32)}[targets]
    ex, tx = ember.from_numpy(a.copy()).requires_grad_(), torch.from_numpy(a.copy()).requires_grad_()
    el = getattr(enn, name)(reduction=reduction)(ex, ember.from_numpy(t.copy()))
    tl = getattr(torch.nn, name)(reduction=reduction)(tx, torch.from_numpy(t.copy()))
    assert_close(el, tl, 1e-5, 1e-6)
    el.sum().backward()
    tl.sum().backward()
    assert_close(ex.grad, tx.grad, 1e-5, 1e-6)


class Net(enn.Module):
    def __init__(self):
        super().__init__()
        self.body = enn.Sequential(enn.Linear(4, 8), enn.ReLU())
        self.head = enn.Linear(8, 2)
        self.scale = enn.Parameter(ember.ones(1))
        self.register_buffer("steps", ember.zeros(1))
        self.note = "plain attribute"

    def forward(self, x):
        return self.head(self.body(x)) * self.scale


class TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())
        self.head = torch.nn.Linear(8, 2)
        self.scale = torch.nn.Parameter(torch.ones(1))
        self.register_buffer("steps", torch.zeros(1))

    def forward(self, x):
        return self.head(self.body(x)) * self.scale


def test_python_module_registers_like_torch():
    net, tnet = Net(), TorchNet()
    assert [n for n, _ in net.named_parameters()] == [n for n, _ in tnet.named_parameters()]
    assert list(net.state_dict().keys()) == list(tnet.state_dict().keys())
    assert [n for n, _ in net.named_modules()] == [n for n, _ in tnet.named_modules()]
    assert [n for n, _ in net.named_buffers()] == ["steps"]
    assert repr(net.body) == repr(tnet.body)
    assert repr(net) == repr(tnet).replace("TorchNet", "Net")
    check_layer(net, tnet, (3, 4))
    assert net.note == "plain attribute" and "note" not in net.state_dict()
    net.eval()
    assert not net.training and not net.body[0].training
    net.train()
    assert net.body[1].training
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_load_state_dict_reports_missing_unexpected_and_size_mismatch():
    net = Net()
    sd = net.state_dict()
    sd.pop("head.bias")
    sd["extra"] = ember.zeros(1)
    with pytest.raises(RuntimeError, match=r'(?s)Missing key\(s\) in state_dict: "head.bias".*Unexpected key\(s\) in '
                                           r'state_dict: "extra"'):
        net.load_state_dict(sd)
    keys = net.load_state_dict(sd, strict=False)
    assert keys.missing_keys == ["head.bias"] and keys.unexpected_keys == ["extra"]
    sd = net.state_dict()
    sd["head.weight"] = ember.zeros(3, 3)
    with pytest.raises(RuntimeError, match=r"size mismatch for head.weight: copying a param with shape "
                                           r"ember.Size\(\[3, 3\]\) from checkpoint, the shape in current model is "
                                           r"ember.Size\(\[2, 8\]\)"):
        net.load_state_dict(sd)


def test_assigning_a_plain_tensor_to_a_parameter_slot_is_refused():
    lin = enn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign 'ember.Tensor' as parameter 'weight'"):
        lin.weight = ember.zeros(2, 2)


def test_forward_hooks_and_apply_and_containers():
    lin = enn.Linear(2, 2)
    calls = []
    h = lin.register_forward_hook(lambda m, inp, out: calls.append(tuple(out.shape)))
    lin(ember.zeros(3, 2))
    h.remove()
    lin(ember.zeros(3, 2))
    assert calls == [(3, 2)]
    seen = []
    enn.Sequential(enn.Linear(1, 1), enn.ReLU()).apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "ReLU", "Sequential"]
    ml = enn.ModuleList([enn.Linear(1, 1) for _ in range(3)])
    assert len(ml) == 3 and len(list(ml.parameters())) == 6
    md = enn.ModuleDict({"a": enn.Linear(1, 2)})
    assert "a" in md and list(md.state_dict().keys()) == ["a.weight", "a.bias"]


def test_module_to_double_and_save_load_roundtrip(tmp_path):
    net = Net().double()
    assert all(p.dtype == ember.float64 for p in net.parameters())
    assert all(isinstance(p, enn.Parameter) for p in net.parameters())
    path = tmp_path / "net.pt"
    ember.save(net.state_dict(), path)
    sd = ember.load(path)
    fresh = Net().double()
    fresh.load_state_dict(sd)
    x = ember.randn(2, 4, dtype=ember.float64)
    assert fresh(x).equal(net(x))
    assert not list(tmp_path.glob(".ember-save-*"))  # the temporary file was renamed


def test_init_functions_fill_in_place_with_the_right_statistics():
    w = ember.empty(256, 128)
    out = enn.init.kaiming_uniform_(w, a=0)
    assert out is w
    bound = (6 / 128) ** 0.5
    assert w.abs().max().item() <= bound and w.abs().max().item() > 0.9 * bound
    enn.init.zeros_(w)
    assert w.abs().sum().item() == 0
    assert enn.init.calculate_gain("relu") == pytest.approx(2 ** 0.5)


@pytest.mark.parametrize("kind,kwargs", [("LSTM", dict(num_layers=2)), ("GRU", dict(batch_first=True)),
                                         ("RNN", dict(bidirectional=True)), ("LSTM", dict(bidirectional=True))])
def test_recurrent_layers_match_torch(kind, kwargs):
    emod, tmod = getattr(enn, kind)(3, 5, **kwargs), getattr(torch.nn, kind)(3, 5, **kwargs)
    copy_weights(emod, tmod)
    assert list(emod.state_dict().keys()) == list(tmod.state_dict().keys())
    a = np.random.randn(4, 2, 3).astype(np.float32)
    ex, tx = ember.from_numpy(a.copy()).requires_grad_(), torch.from_numpy(a.copy()).requires_grad_()
    eo, eh = emod(ex)
    to, th = tmod(tx)
    assert_close(eo, to, 1e-4, 1e-5)
    assert_close(list(eh) if kind == "LSTM" else eh, list(th) if kind == "LSTM" else th, 1e-4, 1e-5)
    eo.sum().backward()
    to.sum().backward()
    for (en, ep), (tn, tp) in zip(emod.named_parameters(), tmod.named_parameters()):
        assert en == tn
        assert_close(ep.grad, tp.grad, 1e-4, 1e-5)
    assert_close(ex.grad, tx.grad, 1e-4, 1e-5)
    assert repr(emod) == repr(tmod)
    opt = ember.optim.SGD(emod.parameters(), lr=0.1)
    before = emod.state_dict()[next(iter(emod.state_dict()))].clone()
    opt.step()  # the optimizer updates the tensors the C++ module computes with
    assert not emod.state_dict()[next(iter(emod.state_dict()))].equal(before)
    eo2, _ = emod(ex)
    assert not eo2.detach().equal(eo.detach())


def test_multihead_attention_and_encoder_layer_match_torch():
    emha, tmha = enn.MultiheadAttention(8, 2, batch_first=True), torch.nn.MultiheadAttention(8, 2, batch_first=True)
    copy_weights(emha, tmha)
    assert list(emha.state_dict().keys()) == list(tmha.state_dict().keys())
    a = np.random.randn(2, 5, 8).astype(np.float32)
    eq, tq = ember.from_numpy(a.copy()), torch.from_numpy(a.copy())
    mask = np.triu(np.ones((5, 5), dtype=bool), 1)
    eo, ew = emha(eq, eq, eq, attn_mask=ember.from_numpy(mask))
    to, tw = tmha(tq, tq, tq, attn_mask=torch.from_numpy(mask))
    assert_close(eo, to, 1e-4, 1e-5)
    assert_close(ew, tw, 1e-4, 1e-5)
    assert repr(emha) == repr(tmha)
    elayer = enn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=True)
    tlayer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                              norm_first=True)
    check_layer(elayer.eval(), tlayer.eval(), (2, 5, 8))


def test_load_weights_only_reads_state_dicts_and_refuses_code(tmp_path):
    import pickle

    net = Net()
    ember.save({"model": net.state_dict(), "epoch": 3, "note": "ok", "dtype": ember.float32,
                "p": net.scale}, tmp_path / "ckpt.pt")
    ck = ember.load(tmp_path / "ckpt.pt", weights_only=True)
    assert ck["epoch"] == 3 and ck["dtype"] == ember.float32 and isinstance(ck["p"], enn.Parameter)
    assert list(ck["model"].keys()) == list(net.state_dict().keys())
    assert ck["model"]["head.weight"].equal(net.head.weight.detach())

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    (tmp_path / "evil.pt").write_bytes(pickle.dumps({"x": Evil()}))
    with pytest.raises(pickle.UnpicklingError, match=r"refuses to load builtins.print"):
        ember.load(tmp_path / "evil.pt", weights_only=True)
