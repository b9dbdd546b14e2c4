"""The tool loop shared by every kind of agent work: a step decides, a host acts on its outcome."""
