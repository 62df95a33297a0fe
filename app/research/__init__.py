"""The research engine: modes, prompts, budgets, evidence and citations."""
