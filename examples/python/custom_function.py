"""A custom autograd Function written in Python (a numerically stable softplus with a
hand-written backward), checked with gradcheck and against torch's built-in softplus.

    PYTHONPATH=build/python python3 examples/python/custom_function.py
"""

import ember as torch  # the only ember-specific line


class StableSoftplus(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, beta):
        # log(1 + exp(beta x)) / beta, without overflow for large beta x
        bx = x * beta
        y = (bx.clamp(min=0) + (-(bx.abs())).exp().log1p()) / beta
        ctx.save_for_backward(x)
        ctx.beta = beta
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x * ctx.beta).sigmoid(), None


def main():
    torch.manual_seed(0)
    x = torch.randn(8, dtype=torch.float64, requires_grad=True)
    print("gradcheck:", torch.autograd.gradcheck(lambda t: StableSoftplus.apply(t, 2.0), (x,)))
    y = StableSoftplus.apply(x, 2.0)
    print("grad_fn:", y.grad_fn.name())
    y.sum().backward()
    expected = x.detach().clone().requires_grad_()
    torch.nn.functional.softplus(expected, beta=2).sum().backward()
    print("max |custom - built-in softplus| grad:", (x.grad - expected.grad).abs().max().item())


if __name__ == "__main__":
    main()
