from energy_platform.cli import main

main()
