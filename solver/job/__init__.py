"""One job: build the plan model, solve it, extract the plan; sensitivity and infeasibility."""
