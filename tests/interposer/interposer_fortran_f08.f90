! interposer_fortran_f08.f90 - interposer_fortran.f90 with `use mpi_f08`,
! whose handles are derived types holding one integer: the interposer's
! mpi_<name>_f08_ entry points take them. Results are checked against
! closed forms; the report must show the calls served (CMake's --expect checks).
program interposer_fortran_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 1001
  integer :: ierr, rank, nranks, i, r, wrong
  double precision :: x(n), y(n)
  integer :: k(n), unused(n)
  integer, allocatable :: gathered(:)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  wrong = 0

  do i = 1, n
    x(i) = dble(rank + i)
  end do
  call MPI_Allreduce(x, y, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (y(i) /= dble(nranks * i + nranks * (nranks - 1) / 2)) wrong = wrong + 1
  end do
  call MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (x(i) /= dble(nranks - 1 + i)) wrong = wrong + 1
  end do

  do i = 1, n
    k(i) = merge(i * 7, 0, rank == nranks - 1)
  end do
  call MPI_Bcast(k, n, MPI_INTEGER, nranks - 1, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (k(i) /= i * 7) wrong = wrong + 1
  end do

  do i = 1, n
    k(i) = rank + i
  end do
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, k, n, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  else
    call MPI_Reduce(k, unused, n, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  end if
  if (rank == 0) then
    do i = 1, n
      if (k(i) /= nranks * i + nranks * (nranks - 1) / 2) wrong = wrong + 1
    end do
  end if

  allocate(gathered(3 * nranks))
  gathered = -1
  gathered(3 * rank + 1 : 3 * rank + 3) = (/ rank, rank * 10, rank * 100 /)
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do r = 0, nranks - 1
    if (any(gathered(3 * r + 1 : 3 * r + 3) /= (/ r, r * 10, r * 100 /))) wrong = wrong + 1
  end do
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) wrong = wrong + 1

  call MPI_Allreduce(MPI_IN_PLACE, wrong, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0)', 'interposer_fortran_f08 (use mpi_f08): wrong results summed over ranks: ', wrong
  call MPI_Finalize(ierr)
  if (wrong /= 0) stop 1
end program interposer_fortran_f08
