"""moetrace."""
