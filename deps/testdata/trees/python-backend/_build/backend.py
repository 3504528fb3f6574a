from helpers.wheel import build_wheel, build_editable  # noqa: F401
