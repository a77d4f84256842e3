"""The full-batch optimizer of t-SNE and of GDR's normalized mode: gradient descent with
momentum and gains through phases (:mod:`.descent`), scikit-learn's stopping rules
(:mod:`.stopping`), t-SNE's forces (:mod:`.forces`: attraction, and the repulsion exact in
:mod:`.gradient_numba`, by Barnes-Hut or by FFT interpolation in :mod:`.repulsion`) and the
GPU's descent (:mod:`.tsne_cuda`, :mod:`.descent_cuda`). GDR's normalized mode brings its own
forces (:class:`unimap.optimizers.gdr.forces.SampledForces`)."""
