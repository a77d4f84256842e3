"""``unimap transform``: place new points with a model saved by ``unimap embed --save-model``
(or ``est.save``) and write their embedding.
"""

from __future__ import annotations

import time
from pathlib import Path

from unimap.cli.common import _load_input, _output_path, _refuse_overwriting_inputs
from unimap.io.write import write_embedding


def _transform(args) -> int:
    import unimap

    out = _output_path(args.output, "--output")
    _refuse_overwriting_inputs({"--output": out}, [args.input, args.model])
    if not Path(args.model).is_file():
        raise FileNotFoundError(f"no model file {args.model!r}")
    model = unimap.load(args.model)
    X, _, _ = _load_input(args)
    start = time.perf_counter()
    embedding = model.transform(X)
    from unimap.methods.registry import variant_of

    # named as `embed` names it: GDR(normalized=True)'s is gdr_tsne
    write_embedding(out, embedding, name=variant_of(model).key.replace("-", "_"))
    print(f"placed {X.shape[0]} points with {type(model).__name__} in "
          f"{time.perf_counter() - start:.2f}s; wrote {out}")
    return 0
