"""PopTorch's ``poptorch.ctc_beam_search_decoder`` for xtrain.torch (docs/poptorch.md, "Ops").

In the capture it writes xtrain's ai.graphcore CtcBeamSearchDecoder (src/ir/ops/ctc_ops.cpp): the
lengths are cast to the UINT32 the op takes, and its UINT32 lengths and labels to INT32, since
PyTorch has no uint32 tensors. On the CPU (the module run outside a wrapper) the same prefix beam
search runs in Python, candidates ranked as the device ranks them, so a model gives the same
answer on both. An inference op: it has no gradient, as in PopTorch.
"""
import math

import torch
from onnx import helper

from . import _capture

GRAPHCORE = "ai.graphcore"
_ONNX_INT32, _ONNX_UINT32 = 6, 12
_PLACEHOLDER = "TorchCtcBeamSearchDecoder"  # the capture's op, before rewrite()


def _log_add(a, b):
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))


def _extend(beams, log_probs, blank):
    """One time step: every kept prefix extended by every class (classes outermost, as the
    device's kernel, so equal scores keep the same order)."""
    candidates = {}  # prefix -> [log p(ends in blank), log p(ends in its last label)]
    for label, p in enumerate(log_probs):
        for prefix, (pb, pnb) in beams:
            if label == blank:
                entry = candidates.setdefault(prefix, [-math.inf, -math.inf])
                entry[0] = _log_add(entry[0], _log_add(pb + p, pnb + p))
                continue
            repeat = bool(prefix) and prefix[-1] == label
            entry = candidates.setdefault(prefix + (label,), [-math.inf, -math.inf])
            # A repeated label makes a new label only across a blank.
            entry[1] = _log_add(entry[1], pb + p if repeat else _log_add(pb + p, pnb + p))
            if repeat:
                same = candidates.setdefault(prefix, [-math.inf, -math.inf])
                same[1] = _log_add(same[1], pnb + p)
    return list(candidates.items())


def _decode_one(log_probs, length, blank, beam_width):
    """[(prefix, log-probability)] of the kept beams of one sequence, best first."""
    beams = [((), (0.0, -math.inf))]
    for t in range(length):
        ranked = sorted(_extend(beams, log_probs[t], blank),
                        key=lambda item: -_log_add(*item[1]))  # stable: ties keep their order
        beams = ranked[:beam_width]
    return [(prefix, _log_add(pb, pnb)) for prefix, (pb, pnb) in beams]


def _decode_cpu(log_probs, lengths, blank, beam_width, top_paths):
    steps, batch, _ = log_probs.shape
    probs = torch.full((batch, top_paths), -math.inf, dtype=log_probs.dtype)
    label_lengths = torch.zeros((batch, top_paths), dtype=torch.int32)
    labels = torch.zeros((batch, top_paths, steps), dtype=torch.int32)
    if _capture.capturing():  # the traced values are not used: the device decodes
        return probs, label_lengths, labels
    values = log_probs.detach().double().tolist()
    for n in range(batch):
        sequence = [values[t][n] for t in range(steps)]
        beams = _decode_one(sequence, int(lengths[n]), blank, beam_width)
        for k, (prefix, score) in enumerate(beams[:top_paths]):
            probs[n, k] = score
            label_lengths[n, k] = len(prefix)
            labels[n, k, :len(prefix)] = torch.tensor(prefix, dtype=torch.int32)
    return probs, label_lengths, labels


class _CtcBeamSearchDecoder(torch.autograd.Function):
    @staticmethod
    def forward(ctx, log_probs, lengths, blank, beam_width, top_paths):
        return _decode_cpu(log_probs, lengths, blank, beam_width, top_paths)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("ctc_beam_search_decoder has no gradient (an inference op)")

    @staticmethod
    def symbolic(g, log_probs, lengths, blank, beam_width, top_paths):
        # A placeholder with the int lengths and int32 outputs PyTorch knows: torch.onnx refuses
        # UINT32 tensors, and its checker the op's schema with others, so rewrite() makes it the
        # op, between Casts to and from UINT32, after the export.
        outputs = g.op(GRAPHCORE + "::" + _PLACEHOLDER, log_probs, lengths, blank_i=blank,
                       beam_width_i=beam_width, top_paths_i=top_paths, outputs=3)
        steps, batch, _ = log_probs.type().sizes()
        shapes = ([batch, top_paths], [batch, top_paths], [batch, top_paths, steps])
        for output, dtype, shape in zip(outputs, (torch.float32, torch.int32, torch.int32), shapes):
            output.setType(log_probs.type().with_dtype(dtype).with_sizes(shape))
        return outputs


def rewrite(proto):
    """Each captured CtcBeamSearchDecoder gets its lengths cast to UINT32 and its UINT32 lengths
    and labels cast to the INT32 the capture promised (the names after the op stay the same)."""
    nodes = []
    for node in proto.graph.node:
        if node.domain != GRAPHCORE or node.op_type != _PLACEHOLDER:
            nodes.append(node)
            continue
        node.op_type = "CtcBeamSearchDecoder"
        lengths = node.input[1] + "/uint32:" + node.output[0]
        nodes.append(helper.make_node("Cast", [node.input[1]], [lengths], to=_ONNX_UINT32))
        node.input[1] = lengths
        nodes.append(node)
        for k in (1, 2):
            name = node.output[k]
            node.output[k] = name + "/uint32"
            nodes.append(helper.make_node("Cast", [node.output[k]], [name], to=_ONNX_INT32))
    del proto.graph.node[:]
    proto.graph.node.extend(nodes)


def _check_int(name, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, int) or value < low or \
            (high is not None and value > high):
        bound = "an int >= %d" % low if high is None else "an int in [%d, %d]" % (low, high)
        raise ValueError("ctc_beam_search_decoder: %s must be %s, got %r" % (name, bound, value))


def ctc_beam_search_decoder(log_probs, lengths, blank=0, beam_width=100, top_paths=1):
    """PopTorch's CTC beam search decoder: ``log_probs`` [T, N, C] log-probabilities, ``lengths``
    [N] integer input lengths. Returns (log-probabilities of the decoded sequences [N, top_paths],
    best first; their lengths [N, top_paths], int32; the sequences [N, top_paths, T], int32, 0
    beyond each length). A path the beam did not find has log-probability -inf and length 0."""
    if not isinstance(log_probs, torch.Tensor) or not isinstance(lengths, torch.Tensor):
        raise TypeError("ctc_beam_search_decoder: log_probs and lengths must be torch tensors, "
                        "got %s and %s" % (type(log_probs).__name__, type(lengths).__name__))
    if log_probs.dim() != 3 or log_probs.dtype != torch.float32:
        raise ValueError("ctc_beam_search_decoder: log_probs must be float32 [T, N, C], got %s %s"
                         % (log_probs.dtype, tuple(log_probs.shape)))
    steps, batch, classes = log_probs.shape
    if lengths.shape != (batch,) or lengths.is_floating_point() or lengths.is_complex():
        raise ValueError("ctc_beam_search_decoder: lengths must be integers of shape [%d] (N of "
                         "log_probs %s), got %s %s" % (batch, tuple(log_probs.shape),
                                                       lengths.dtype, tuple(lengths.shape)))
    _check_int("blank", blank, 0, classes - 1)
    _check_int("beam_width", beam_width, 1)
    _check_int("top_paths", top_paths, 1, beam_width)
    if not _capture.capturing() and bool(((lengths < 0) | (lengths > steps)).any()):
        raise ValueError("ctc_beam_search_decoder: lengths %s must be in [0, %d] (T of log_probs)"
                         % (lengths.tolist(), steps))
    return _CtcBeamSearchDecoder.apply(log_probs, lengths, blank, beam_width, top_paths)
