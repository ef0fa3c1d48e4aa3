"""Process set-up that must happen before litellm is imported anywhere.

litellm fetches a model price map over the network at import unless told to use its bundled
copy; with no network that costs retries and warnings on every start.

Inspect counts tokens with tiktoken's o200k_base encoding where a provider reports no usage
(mockllm's default replies, e.g. `pibench play --as user --model mockllm/model`), and tiktoken
downloads that encoding on first use. litellm ships it and points tiktoken at its copy when it
is imported; doing the same here, when nothing else chose a cache, keeps such runs offline.
"""

import importlib.util
import os
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def _bundled_tokenizers() -> str | None:
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    folder = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    return str(folder) if folder.is_dir() else None


if "TIKTOKEN_CACHE_DIR" not in os.environ and "CUSTOM_TIKTOKEN_CACHE_DIR" not in os.environ:
    _folder = _bundled_tokenizers()
    if _folder:
        os.environ["TIKTOKEN_CACHE_DIR"] = _folder
