from dbsweep.cli import main

main()
