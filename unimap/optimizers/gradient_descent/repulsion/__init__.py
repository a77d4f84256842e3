"""t-SNE's all-pairs repulsion: Barnes-Hut trees and FFT-accelerated interpolation."""
