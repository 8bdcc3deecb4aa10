! Device arrays from Fortran on 2 ranks sharing the GPU, MPIZip preloaded (tests/gpu/fortran_device.sh).
! There is no CUDA Fortran here: the arrays are allocated with cudaMalloc through iso_c_binding and
! handed to MPI as Fortran pointers onto device memory (c_f_pointer), as a Fortran code calling a
! CUDA library would. Sends, receives (sized by MPI_Probe), MPI_Isend/MPI_Irecv with MPI_Waitall,
! and MPI_Allreduce out of place and with MPI_IN_PLACE, every result copied back and checked bit for
! bit against what was sent or the exact sum. Built with -DF08 for use mpi_f08, else use mpi.
! `fortran_device probe` exits 0 where there is a GPU and 77 where there is none, without MPI.
#define PROGRAM_NAME "fortran_device"
#ifdef F08
#define COMM_T type(MPI_Comm)
#define REQ_T type(MPI_Request)
#define STATUS_T type(MPI_Status)
#define SRC(s) s%MPI_SOURCE
#define TAG(s) s%MPI_TAG
#define FLAVOUR "mpi_f08"
#else
#define COMM_T integer
#define REQ_T integer
#define STATUS_T integer, dimension(MPI_STATUS_SIZE)
#define SRC(s) s(MPI_SOURCE)
#define TAG(s) s(MPI_TAG)
#define FLAVOUR "use mpi"
#endif

module cuda_runtime
  use, intrinsic :: iso_c_binding
  implicit none
  integer(c_int), parameter :: cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2
  interface
    integer(c_int) function cudaGetDeviceCount(count) bind(C, name="cudaGetDeviceCount")
      import :: c_int
      integer(c_int) :: count
    end function
    integer(c_int) function cudaMalloc(ptr, bytes) bind(C, name="cudaMalloc")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr) :: ptr
      integer(c_size_t), value :: bytes
    end function
    integer(c_int) function cudaFree(ptr) bind(C, name="cudaFree")
      import :: c_int, c_ptr
      type(c_ptr), value :: ptr
    end function
    integer(c_int) function cudaMemcpy(dst, src, bytes, kind) bind(C, name="cudaMemcpy")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: dst, src
      integer(c_size_t), value :: bytes
      integer(c_int), value :: kind
    end function
  end interface
end module

program fortran_device
  use, intrinsic :: iso_c_binding
  use cuda_runtime
#ifdef F08
  use mpi_f08
#else
  use mpi
#endif
  implicit none
  ! 16 MiB of REAL and of DOUBLE PRECISION: above MPIZIP_GPU_MIN_BYTES (4 MiB), so a rank on
  ! another node compresses them on the GPU.
  integer, parameter :: n = 4 * 1024 * 1024, nd = 2 * 1024 * 1024
  integer :: rank, nranks, ierr, cnt, i, failures, ndev
  character(len=16) :: arg
  COMM_T :: comm
  REQ_T :: reqs(2)
  STATUS_T :: st
  integer(c_int32_t), allocatable, target :: bits(:), got(:)
  double precision, allocatable, target :: x(:), y(:)
  type(c_ptr) :: d_send, d_recv, d_recv2, d_x, d_y
  ! Fortran views of the device arrays: MPI gets their addresses, nothing here reads them.
  integer(c_int32_t), pointer, contiguous :: send_dev(:), recv_dev(:), recv2_dev(:)
  double precision, pointer, contiguous :: x_dev(:), y_dev(:)

  call get_command_argument(1, arg)
  ndev = 0
  if (cudaGetDeviceCount(ndev) /= 0 .or. ndev < 1) then
    print *, "fortran_device: no GPU"
    stop 77
  end if
  if (arg == "probe") stop 0

  failures = 0
  call MPI_Init(ierr)
  comm = MPI_COMM_WORLD
  call MPI_Comm_rank(comm, rank, ierr)
  call MPI_Comm_size(comm, nranks, ierr)
  if (nranks /= 2) then
    print *, "fortran_device needs 2 ranks"
    call MPI_Abort(comm, 1, ierr)
  end if

  allocate(bits(n), got(n), x(nd), y(nd))
  call fill32(bits)
  d_send = device(int(n, c_size_t) * 4)
  d_recv = device(int(n, c_size_t) * 4)
  d_recv2 = device(int(n, c_size_t) * 4)
  d_x = device(int(nd, c_size_t) * 8)
  d_y = device(int(nd, c_size_t) * 8)
  call c_f_pointer(d_send, send_dev, [n])
  call c_f_pointer(d_recv, recv_dev, [n])
  call c_f_pointer(d_recv2, recv2_dev, [n])
  call c_f_pointer(d_x, x_dev, [nd])
  call c_f_pointer(d_y, y_dev, [nd])
  call to_device(d_send, c_loc(bits), int(n, c_size_t) * 4)

  ! 1. MPI_Send and MPI_Recv of device memory.
  if (rank == 0) then
    call MPI_Send(send_dev, n, MPI_REAL, 1, 1, comm, ierr)
  else
    call MPI_Recv(recv_dev, n, MPI_REAL, 0, 1, comm, st, ierr)
    call MPI_Get_count(st, MPI_REAL, cnt, ierr)
    call expect(cnt == n .and. SRC(st) == 0 .and. TAG(st) == 1, "recv status")
    call check_recv(d_recv, "send/recv")
  end if

  ! 2. MPI_Probe, then a receive of the size it found into device memory.
  if (rank == 0) then
    call MPI_Send(send_dev, n, MPI_REAL, 1, 2, comm, ierr)
  else
    call MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, st, ierr)
    call MPI_Get_count(st, MPI_REAL, cnt, ierr)
    call expect(cnt == n .and. TAG(st) == 2, "probe status")
    call MPI_Recv(recv_dev, cnt, MPI_REAL, SRC(st), TAG(st), comm, MPI_STATUS_IGNORE, ierr)
    call check_recv(d_recv, "probe/recv")
  end if

  ! 3. Two non-blocking messages each way, MPI_Waitall.
  call MPI_Isend(send_dev, n, MPI_REAL, 1 - rank, 3, comm, reqs(1), ierr)
  call MPI_Irecv(recv2_dev, n, MPI_REAL, 1 - rank, 3, comm, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  call check_recv(d_recv2, "isend/irecv")

  ! 4. MPI_Allreduce of device memory, out of place and in place; exact sums in any order.
  do i = 1, nd
    x(i) = dble(rank + 1) * dble(mod(i, 4093)) - 1000d0
  end do
  call to_device(d_x, c_loc(x), int(nd, c_size_t) * 8)
  call MPI_Allreduce(x_dev, y_dev, nd, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
  call MPI_Allreduce(MPI_IN_PLACE, x_dev, nd, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
  y = 0
  call to_host(c_loc(y), d_y, int(nd, c_size_t) * 8)
  call to_host(c_loc(x), d_x, int(nd, c_size_t) * 8)
  cnt = 0
  do i = 1, nd
    if (y(i) /= 3d0 * dble(mod(i, 4093)) - 2000d0 .or. x(i) /= y(i)) cnt = cnt + 1
  end do
  call expect(cnt == 0, "allreduce results")

  if (cudaFree(d_send) + cudaFree(d_recv) + cudaFree(d_recv2) + cudaFree(d_x) + cudaFree(d_y) /= 0) &
    call expect(.false., "cudaFree")
  if (failures == 0) print '(a, i0, a)', "fortran_device " // FLAVOUR // " rank ", rank, ": ok"
  call MPI_Finalize(ierr)
  if (failures /= 0) error stop 1

contains

#include "../fortran/expect.inc"

  type(c_ptr) function device(bytes)
    integer(c_size_t), intent(in) :: bytes
    device = c_null_ptr
    if (cudaMalloc(device, bytes) /= 0) then
      print *, "fortran_device: cudaMalloc failed"
      error stop 1
    end if
  end function

  subroutine to_device(dst, src, bytes)
    type(c_ptr), intent(in) :: dst, src
    integer(c_size_t), intent(in) :: bytes
    if (cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice) /= 0) call expect(.false., "cudaMemcpy to device")
  end subroutine

  subroutine to_host(dst, src, bytes)
    type(c_ptr), intent(in) :: dst, src
    integer(c_size_t), intent(in) :: bytes
    if (cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost) /= 0) call expect(.false., "cudaMemcpy to host")
  end subroutine

  ! The device array d holds exactly `bits`.
  subroutine check_recv(d, what)
    type(c_ptr), intent(in) :: d
    character(*), intent(in) :: what
    got = 0
    call to_host(c_loc(got), d, int(n, c_size_t) * 4)
    call expect(all(got == bits), what)
  end subroutine

  ! REAL bit patterns: smooth values with every 97th a raw pattern (NaN payloads, infinities,
  ! subnormals among them), and a few chosen ones.
  subroutine fill32(v)
    integer(c_int32_t), intent(out) :: v(:)
    integer(8) :: s
    integer :: j
    s = 88172645463325252_8
    do j = 1, size(v)
      s = ieor(s, ishft(s, 13))
      s = ieor(s, ishft(s, -7))
      s = ieor(s, ishft(s, 17))
      if (mod(j, 97) == 0) then
        v(j) = transfer(ishft(s, -20), v(j))
      else
        v(j) = transfer(real(sin(0.001d0 * j) * 100d0, 4), v(j))
      end if
    end do
    v(1) = int(z'7fc00001', c_int32_t)
    v(2) = ishft(1_c_int32_t, 31)
    v(3) = 1
  end subroutine

end program
