# Stands in for a Python without torch (verify-setup in taps.test).
raise ImportError("No module named 'torch'", name="torch")
