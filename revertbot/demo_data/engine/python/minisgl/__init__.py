"""minisgl: a miniature inference engine used to demonstrate revertbot."""
