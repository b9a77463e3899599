"""c3sim: the flashable ESP32-C3 image of Amber booted on unicorn's RV32 CPU with the
board's peripherals modelled from the TRM (image.py the ROM loader's parsing,
periph.py the register models, machine.py the CPU, memory and trap wiring,
__main__.py the command line). Host tool only: nothing in the kernel depends on it.
"""
