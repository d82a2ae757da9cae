"""Words of the table's API that the table, its service and every client all use.

The table checks them, the MQTT API validates requests against them, and ``ctl`` offers
them on its command line: one list each, here at the bottom of the tree, because a client
may not import the table (the layers in ``docs/architecture.md``).
"""

from __future__ import annotations

from typing import Final

# How a supervisor may resolve a pause (``resume``'s ``resolution``); "" when it needs
# nothing. A pause's ``needs`` names the one it waits for.
RESOLUTIONS: Final = ("", "accept", "burn", "enter_card", "no_cards_drawn")
