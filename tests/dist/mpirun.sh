# Sourced by the tests that start `mpirun` jobs on one machine (tests/dist/*_test.sh): MPIRUN, the
# command prefix (as root; ranks oversubscribe the cores; shared memory without single-copy,
# which containers often lack; idle ranks yield; one compute thread per rank). A test adds its
# own `-x VAR` exports with MPIRUN+=(...).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none
        --mca mpi_yield_when_idle 1 -x DEEPINFER_THREADS=1)
