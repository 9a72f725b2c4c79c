"""What a build is made from: recipes/*.yaml, base images, tools, TensorFlow's version gates, and the canary (the STAND-IN source and its recipe)."""
