// Note [Element-wise op table]: every table-driven element-wise op is declared once, here.
// X-macro file, deliberately without an include guard: a reader defines the row macros it
// needs, includes this file, and the rows expand where it stands (macros it leaves
// undefined expand to nothing). Readers: the op enums and kinds (kernels/cpu/pointwise.h),
// the public declarations (ops/pointwise.h) and definitions (ops/unary.cpp, binary.cpp),
// the kernel switches (kernels/cpu/unary.cpp, binary.cpp) and autograd
// (autograd/functions_pointwise.cpp). docs/contributing.md shows how to add an op.
//
// EMBER_UNARY(Id, name, kind, api, backward, saves)
// EMBER_UNARY_P1(Id, name, kind, api, backward, saves, T0, p0, d0)
// EMBER_UNARY_P2(Id, name, kind, api, backward, saves, T0, p0, d0, T1, p1, d1)
//   Id        the UnaryOp enumerator; the kernel is the struct of that name in
//             kernels/cpu/unary.cpp, the formula the `case UnaryOp::Id` in unary_grad.
//   name      the public function (and Tensor method) name, as in PyTorch.
//   kind      Float: integer inputs compute in the default float dtype; FloatOnly: floating
//             inputs only; Same: the input's dtype; Bool: a bool result, not differentiable.
//   api       Full: free function + Tensor method + in-place method_; Method: free function
//             + Tensor method; Free: free function only; Custom: written by hand in ops/.
//             (Tensor methods are declared in core/tensor.h; a new op is usually Free.)
//   backward  the autograd node's name (PyTorch's).
//   saves     what the formula reads: Input (x), Output (y) or None.
//   T0 p0 d0  a parameter's type, name and default; the op converts it to a double with
//             unary_param() (ops/unary.cpp) and the kernel and formula read it as p.p0 / p.p1.
//
// EMBER_BINARY(Id, name, kind, api, backward, backward_scalar, saves)
//   kind      Same: the promoted dtype; Float: integer operands compute in the default float
//             dtype; Compare: a bool result of the promoted operands; Logical: operands as
//             bool, a bool result. Compare and Logical ops are not differentiable.
//   api       Full: free (tensor, tensor) + Tensor method + in-place method_; Method: free
//             + method; Free: free only; Custom: written by hand in ops/binary.cpp.
//   backward_scalar  the node's name when the other operand is a wrapped scalar.
//   saves     None; Operands (a and b); Cross (a for b's gradient, b for a's: mul);
//             OperandsOutput (a, b, and the output when b needs a gradient: pow).

#ifndef EMBER_UNARY
#define EMBER_UNARY(Id, name, kind, api, backward, saves)
#endif
#ifndef EMBER_UNARY_P1
#define EMBER_UNARY_P1(Id, name, kind, api, backward, saves, T0, p0, d0)
#endif
#ifndef EMBER_UNARY_P2
#define EMBER_UNARY_P2(Id, name, kind, api, backward, saves, T0, p0, d0, T1, p1, d1)
#endif
#ifndef EMBER_BINARY
#define EMBER_BINARY(Id, name, kind, api, backward, backward_scalar, saves)
#endif

// ---- unary ----
EMBER_UNARY(Exp, exp, Float, Full, "ExpBackward0", Output)
EMBER_UNARY(Exp2, exp2, Float, Full, "Exp2Backward0", Output)
EMBER_UNARY(Expm1, expm1, Float, Full, "Expm1Backward0", Output)
EMBER_UNARY(Log, log, Float, Full, "LogBackward0", Input)
EMBER_UNARY(Log2, log2, Float, Full, "Log2Backward0", Input)
EMBER_UNARY(Log10, log10, Float, Full, "Log10Backward0", Input)
EMBER_UNARY(Log1p, log1p, Float, Full, "Log1PBackward0", Input)
EMBER_UNARY(Sqrt, sqrt, Float, Full, "SqrtBackward0", Output)
EMBER_UNARY(Rsqrt, rsqrt, Float, Full, "RsqrtBackward0", Output)
EMBER_UNARY(Reciprocal, reciprocal, Float, Full, "ReciprocalBackward0", Output)
EMBER_UNARY(Sin, sin, Float, Full, "SinBackward0", Input)
EMBER_UNARY(Cos, cos, Float, Full, "CosBackward0", Input)
EMBER_UNARY(Tan, tan, Float, Full, "TanBackward0", Output)
EMBER_UNARY(Asin, asin, Float, Full, "AsinBackward0", Input)
EMBER_UNARY(Acos, acos, Float, Full, "AcosBackward0", Input)
EMBER_UNARY(Atan, atan, Float, Full, "AtanBackward0", Input)
EMBER_UNARY(Sinh, sinh, Float, Full, "SinhBackward0", Input)
EMBER_UNARY(Cosh, cosh, Float, Full, "CoshBackward0", Input)
EMBER_UNARY(Tanh, tanh, Float, Full, "TanhBackward0", Output)
EMBER_UNARY(Sigmoid, sigmoid, Float, Full, "SigmoidBackward0", Output)
EMBER_UNARY(Erf, erf, Float, Full, "ErfBackward0", Input)
EMBER_UNARY(Erfinv, erfinv, Float, Full, "ErfinvBackward0", Output)
EMBER_UNARY(GeluErf, gelu, Float, Custom, "GeluBackward0", Input)  // gelu(approximate="none")
EMBER_UNARY(GeluTanh, gelu, Float, Custom, "GeluBackward0", Input)  // gelu(approximate="tanh")
EMBER_UNARY(Silu, silu, FloatOnly, Method, "SiluBackward0", Input)
EMBER_UNARY(Frac, frac, FloatOnly, Full, "FracBackward0", None)
EMBER_UNARY(Neg, neg, Same, Full, "NegBackward0", None)
EMBER_UNARY(Abs, abs, Same, Full, "AbsBackward0", Input)
EMBER_UNARY(Sign, sign, Same, Full, "SignBackward0", None)
EMBER_UNARY(Relu, relu, Same, Full, "ReluBackward0", Output)
EMBER_UNARY(Floor, floor, Same, Full, "FloorBackward0", None)
EMBER_UNARY(Ceil, ceil, Same, Full, "CeilBackward0", None)
EMBER_UNARY(Round, round, Same, Full, "RoundBackward0", None)
EMBER_UNARY(Trunc, trunc, Same, Full, "TruncBackward0", None)
EMBER_UNARY(IsNan, isnan, Bool, Method, "", None)
EMBER_UNARY(IsInf, isinf, Bool, Method, "", None)
EMBER_UNARY(IsFinite, isfinite, Bool, Method, "", None)
EMBER_UNARY(LogicalNot, logical_not, Bool, Method, "", None)
// log(1 + exp(beta x)) / beta, x itself where beta x > threshold.
EMBER_UNARY_P2(Softplus, softplus, FloatOnly, Method, "SoftplusBackward0", Input, const Scalar&, beta, 1,
               const Scalar&, threshold, 20)
// x where x > 0, negative_slope * x elsewhere.
EMBER_UNARY_P1(LeakyRelu, leaky_relu, FloatOnly, Free, "LeakyReluBackward0", Input, const Scalar&, negative_slope,
               0.01)
// log(z / (1 - z)) with z = x clamped to [eps, 1 - eps]; no clamp without eps.
EMBER_UNARY_P1(Logit, logit, Float, Free, "LogitBackward0", Input, std::optional<double>, eps, std::nullopt)

// ---- binary ----
EMBER_BINARY(Add, add, Same, Custom, "AddBackward0", "AddBackward0", None)
EMBER_BINARY(Sub, sub, Same, Custom, "SubBackward0", "SubBackward0", None)
EMBER_BINARY(Mul, mul, Same, Custom, "MulBackward0", "MulBackward1", Cross)
EMBER_BINARY(Div, div, Float, Custom, "DivBackward0", "DivBackward1", Operands)
EMBER_BINARY(DivTrunc, div, Same, Custom, "DivBackward0", "DivBackward1", None)  // div(rounding_mode="trunc")
EMBER_BINARY(DivFloor, div, Same, Custom, "DivBackward0", "DivBackward1", None)  // div(rounding_mode="floor")
EMBER_BINARY(Remainder, remainder, Same, Custom, "RemainderBackward0", "RemainderBackward0", Operands)
EMBER_BINARY(Fmod, fmod, Same, Custom, "FmodBackward0", "FmodBackward0", Operands)
EMBER_BINARY(Pow, pow, Same, Custom, "PowBackward1", "PowBackward0", OperandsOutput)
EMBER_BINARY(Maximum, maximum, Same, Method, "MaximumBackward0", "MaximumBackward0", Operands)
EMBER_BINARY(Minimum, minimum, Same, Method, "MinimumBackward0", "MinimumBackward0", Operands)
EMBER_BINARY(Atan2, atan2, Float, Full, "Atan2Backward0", "Atan2Backward0", Operands)
EMBER_BINARY(Eq, eq, Compare, Custom, "", "", None)
EMBER_BINARY(Ne, ne, Compare, Custom, "", "", None)
EMBER_BINARY(Lt, lt, Compare, Custom, "", "", None)
EMBER_BINARY(Le, le, Compare, Custom, "", "", None)
EMBER_BINARY(Gt, gt, Compare, Custom, "", "", None)
EMBER_BINARY(Ge, ge, Compare, Custom, "", "", None)
EMBER_BINARY(LogicalAnd, logical_and, Logical, Method, "", "", None)
EMBER_BINARY(LogicalOr, logical_or, Logical, Method, "", "", None)
EMBER_BINARY(LogicalXor, logical_xor, Logical, Method, "", "", None)

#undef EMBER_UNARY
#undef EMBER_UNARY_P1
#undef EMBER_UNARY_P2
#undef EMBER_BINARY
