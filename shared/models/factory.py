"""The process's model: Gemini when configured, else the clearly labelled offline model.

Both implementations are imported inside ``create_model`` so a process that never calls the
model never imports ``google.genai``.
"""

from __future__ import annotations

import threading

from shared.config import Settings
from shared.models.base import Model

_lock = threading.Lock()
_models: dict[Settings, Model] = {}


def create_model(settings: Settings) -> Model:
    """The model for ``settings``, created once per process and shared by every thread.

    ``GeminiModel`` when ``GEMINI_API_KEY`` is set or ``GEMINI_USE_VERTEX`` is true, otherwise
    ``OfflineModel``.
    """
    model = _models.get(settings)
    if model is not None:
        return model
    with _lock:
        model = _models.get(settings)
        if model is None:
            model = _build(settings)
            _models[settings] = model
        return model


def clear_model_cache() -> None:
    """Forget (and close, where closable) every cached model; for tests and shutdown."""
    with _lock:
        models = list(_models.values())
        _models.clear()
    for model in models:
        close = getattr(model, "close", None)
        if callable(close):
            close()


def _build(settings: Settings) -> Model:
    if settings.gemini_api_key or settings.gemini_use_vertex:
        from shared.models.gemini import GeminiModel

        return GeminiModel(settings)
    from shared.models.offline import OfflineModel

    return OfflineModel(pace_s=settings.offline_model_pace_s)
