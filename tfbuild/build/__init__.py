"""Running a plan: base images, the source tree, preflight, the build container, publishing, a rebuild from a receipt, and doctor."""
