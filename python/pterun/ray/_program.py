"""How a program reaches a Ray actor, and how the actor sets pterun up.

A program travels as a path (on storage every node can read; the actor
memory-maps it once), as bytes (shipped with the actor's arguments), or as
an object reference made by :func:`put_program` (one copy in each node's
object store, which every actor on that node maps without copying).
"""

from __future__ import annotations

import os
from typing import Any, Optional, Union

import numpy as np
import ray

import pterun

ProgramSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, np.ndarray,
                      "ray.ObjectRef"]


def put_program(program: Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]
                ) -> "ray.ObjectRef":
    """Reads a program (a path or bytes) once, here, and puts it into Ray's
    object store as a read-only uint8 array.

    Actors given the reference load the program from their node's shared
    memory without a copy (pterun keeps using a read-only buffer in place,
    B14), so a large program is sent to each node once, not once per actor.
    The reference lives as long as this process holds it (Ray's ownership):
    Ray Serve, whose deployments outlive the process that started them,
    takes a path or bytes instead.
    """
    if isinstance(program, (str, os.PathLike)):
        with open(program, "rb") as f:
            data = f.read()
    else:
        data = bytes(program)
    pterun.load_program(data)  # refuse a damaged file here, before any actor starts
    return ray.put(np.frombuffer(data, dtype=np.uint8))


def resolve(source: Any) -> Any:
    """The path or bytes-like object ``pterun.load_program`` takes."""
    if isinstance(source, ray.ObjectRef):
        source = ray.get(source)
    if isinstance(source, np.ndarray) and source.dtype != np.uint8:
        raise TypeError(f"pterun.ray: a program given as an array must be uint8 bytes, not "
                        f"{source.dtype}")
    return source


def load(program: ProgramSource, data: Optional[ProgramSource]) -> pterun.Program:
    """Loads the program once; methods are loaded from the result."""
    return pterun.load_program(resolve(program), data=None if data is None else resolve(data))


def in_ray_worker() -> bool:
    """True inside a Ray task or actor (not the driver)."""
    if not ray.is_initialized():
        return False
    return ray.get_runtime_context().worker.mode == ray.WORKER_MODE


def choose_device(device: Optional[str]) -> str:
    """The device a method runs on: the one asked for, else ``"cuda"`` when
    Ray gave this actor a GPU (Ray makes it the only visible one, so it is
    ``cuda:0`` here), else ``"cpu"``."""
    if device is not None:
        return device
    gpus = ray.get_gpu_ids() if in_ray_worker() else []
    if not gpus:
        return "cpu"
    if pterun.cuda_device_count() == 0:
        raise RuntimeError(
            f"pterun.ray: Ray gave this actor GPU {gpus} but pterun sees no usable GPU "
            "(a build without CUDA, or no driver); pass device='cpu' to run on the CPU")
    return "cuda"


def set_threads(num_threads: Optional[int]) -> None:
    """Bounds pterun's CPU threads in this process: ``num_threads`` when
    given, else, inside a Ray actor, the CPUs Ray reserved for it (at least
    one), so that actors sharing a node do not oversubscribe its cores."""
    if num_threads is None:
        if not in_ray_worker():
            return
        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 0.0)
        num_threads = max(1, int(cpus))
    pterun.set_num_threads(num_threads)
