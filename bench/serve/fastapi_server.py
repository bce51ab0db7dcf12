#!/usr/bin/env python3
"""The baseline of bench/serve: the Fashion-MNIST CNN in PyTorch 1.13 behind FastAPI + uvicorn,
answering the same KServe v2 JSON requests as ember-serve (/v2/models/cnn/infer), one
inference per request: what a team writes when it puts a torch model behind an HTTP API.

    fastapi_server.py --port 8500 [--threads N]
"""
import argparse

import torch
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse


def make_cnn():
    # The same layers as examples/fashion_mnist (random weights: speed does not depend on them).
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10)).eval()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model = make_cnn()
    app = FastAPI()

    @app.get("/v2/health/ready")
    def ready():
        return {"ready": True}

    @app.post("/v2/models/cnn/infer")
    async def infer(request: Request):
        body = await request.json()
        inp = body["inputs"][0]
        x = torch.tensor(inp["data"], dtype=torch.float32).reshape(inp["shape"])
        with torch.inference_mode():
            y = model(x)
        return JSONResponse({"model_name": "cnn", "outputs": [
            {"name": "logits", "datatype": "FP32", "shape": list(y.shape), "data": y.flatten().tolist()}]})

    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
