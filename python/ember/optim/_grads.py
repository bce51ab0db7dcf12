"""Clearing gradients, shared by Module.zero_grad and Optimizer.zero_grad."""


def zero_grads(params, set_to_none):
    """Drops each parameter's .grad (set_to_none) or zeroes it in place, detaching a
    gradient that has a graph first (as torch)."""
    for p in params:
        if p.grad is None:
            continue
        if set_to_none:
            p.grad = None
            continue
        g = p.grad
        if g.grad_fn is not None:
            g = g.detach()
            p.grad = g
        g.zero_()
