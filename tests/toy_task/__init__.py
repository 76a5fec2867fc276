"""A toy lab for the tests: reverse a string of digits. It shows what adding a task to the kit takes:
this package and one call to :func:`labs.tasks.register`."""
