"""pterun on Ray: batch inference with Ray Data, online serving with Ray Serve.

Needs the optional extra: ``pip install 'pterun[ray]'`` (Ray Data and Ray
Serve).

Batch inference: :class:`Predictor` is a callable class for
``ray.data.Dataset.map_batches``; each actor loads the program once and
runs a method on the rows of each batch::

    import pterun.ray
    ds = ray.data.from_numpy(images)                       # column "data"
    out = pterun.ray.predict(ds, "model.pte", concurrency=2, rows_per_call=256)
    # much the same by hand (predict picks the Ray batch from the method's row size):
    out = ds.map_batches(pterun.ray.Predictor, batch_format="numpy", batch_size=16384,
                         zero_copy_batch=True,
                         compute=ray.data.ActorPoolStrategy(
                             size=2, enable_true_multi_threading=True,
                             max_tasks_in_flight_per_actor=4),
                         fn_constructor_kwargs={"program": "model.pte", "rows_per_call": 256})

Serving: :func:`deployment` makes a Ray Serve application that serves a
program's methods over HTTP (JSON or ``.npy`` bodies, ``POST /<method>``),
batching concurrent requests with ``serve.batch``::

    from ray import serve
    serve.run(pterun.ray.deployment("model.pte", max_batch_size=32), route_prefix="/digits")

docs/ray.md describes both in full.
"""

try:
    import ray  # noqa: F401
    from ray import serve  # noqa: F401
    import ray.data  # noqa: F401
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "pterun.ray needs Ray Data and Ray Serve: pip install 'pterun[ray]' "
        f"(importing them failed: {error})") from error

from pterun.ray._batch import Predictor, predict
from pterun.ray._program import put_program
from pterun.ray._serve import Server, deployment

__all__ = ["Predictor", "Server", "deployment", "predict", "put_program"]
