"""Terminal text for each command's answer."""
