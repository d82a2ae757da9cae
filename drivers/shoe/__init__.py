"""The card shoe's scanner: pure protocol codecs, a thin pyserial driver, typed events."""
