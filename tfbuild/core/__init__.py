"""The ground every stage stands on: errors, files, closed choices, data paths, signals, and the one module that talks to Docker."""
