"""Process set-up that must happen before litellm is imported anywhere.

litellm fetches a model price map over the network at import unless told to use its bundled
copy; with no network that costs retries and warnings on every start.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
