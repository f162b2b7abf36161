"""What the framework front ends of matex's Horovod API share."""
