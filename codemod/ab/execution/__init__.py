"""Running the arms: the test processes (a file each, or packed), warm interpreters, probe, reruns."""
