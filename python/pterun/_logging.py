"""Runtime log messages go to Python's logging (logger "pterun"), B24."""

import logging

logger = logging.getLogger("pterun")


def install_log_handler():
    """Routes the C++ runtime's messages to the "pterun" logger."""
    from pterun import _pterun

    if hasattr(_pterun, "_set_log_sink"):
        _pterun._set_log_sink(lambda level, message: logger.log(level, message))
