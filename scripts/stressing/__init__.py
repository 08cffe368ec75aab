"""scripts/stress: what BotPsy does under load, faults and hostile input, as figures."""
