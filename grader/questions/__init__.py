"""One module per unit (unitNN.py), each declaring that unit's questions.

Modules are found by name, so adding a unit means adding a file here.
"""
