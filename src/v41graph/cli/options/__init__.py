"""Option groups the commands share: plan, mapping, cost, checkpoint and DOT flags."""
