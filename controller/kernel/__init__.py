"""The ground floor every part of livetable imports: the error tree, cards, statistics,
progress lines, the command lines' shared look and log set-up, the TOML reader, and the
words of the table's API that clients share (resolutions).

It imports nothing of livetable's, so a driver, the vision code or a simulator can take an
error class or a card without pulling in the table or its service.
"""
