"""Container images for the development cluster, built from local files (no registry is reachable)."""

from sriovop.devcluster.images.oci import ImageConfig, Layer, OCIError, write_image, write_layer
from sriovop.devcluster.images.pause import PAUSE_IMAGE, ensure_pause_archive

__all__ = ["PAUSE_IMAGE", "ImageConfig", "Layer", "OCIError", "ensure_pause_archive", "write_image", "write_layer"]
