"""Shared foundations: errors, progress reporting, atomic files, manifests, output folders."""
