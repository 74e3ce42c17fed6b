"""What `deploy` asks: the engines' search space, its lazy walk, pricing, checks, launch lines."""
