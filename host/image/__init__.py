"""The sandbox image: find or make a base, build ``Dockerfile.sandbox``, keep the image current.

Works where no container registry is reachable: the base can be debootstrapped from a Debian
mirror and the host's CA bundle is handed to pip in a throw-away build stage.
"""

from .base_image import DEFAULT_BASE_IMAGE, LOCAL_BASE_IMAGE
from .builder import ImageStatus, build_image, ensure_image, image_status
from .errors import ImageBuildError
from .source_hash import HASH_LABEL

__all__ = [
    "DEFAULT_BASE_IMAGE",
    "HASH_LABEL",
    "LOCAL_BASE_IMAGE",
    "ImageBuildError",
    "ImageStatus",
    "build_image",
    "ensure_image",
    "image_status",
]
