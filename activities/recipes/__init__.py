"""The recipe library on disk, its fitness from the event log, recipes__match and __plan."""
