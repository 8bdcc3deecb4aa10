! Point-to-point, probes and collectives from Fortran on 2 ranks, every result checked bit for bit
! against what the sender sent or the exact expected value. Built three times (tests/fortran/local.mk):
! with mpif.h (-DMPIF_H), with use mpi (-DUSE_MPI) and with use mpi_f08 (-DF08, every call
! without IERROR, which the f08 bindings may leave out). Prints "fortran_calls <flavour>: ok" on
! each rank that saw no difference; stops with an error otherwise. tests/fortran/fortran.sh runs it.
! `fortran_calls no-bottom` leaves out the MPI_BOTTOM messages (see tests/fortran/fortran.sh).
#define PROGRAM_NAME "fortran_calls"
#ifdef F08
#define COMM_T type(MPI_Comm)
#define REQ_T type(MPI_Request)
#define MSG_T type(MPI_Message)
#define DTYPE_T type(MPI_Datatype)
#define STATUS_T type(MPI_Status)
#define STATUSES_DECL(v, k) type(MPI_Status) :: v(k)
#define SRC(s) s%MPI_SOURCE
#define TAG(s) s%MPI_TAG
#define SRC_I(s, i) s(i)%MPI_SOURCE
#define TAG_I(s, i) s(i)%MPI_TAG
#define VAL(h) h%MPI_VAL
#define IERR
#define IERR_FIRST
#define FLAVOUR "mpi_f08"
#else
#define COMM_T integer
#define REQ_T integer
#define MSG_T integer
#define DTYPE_T integer
#define STATUS_T integer, dimension(MPI_STATUS_SIZE)
#define STATUSES_DECL(v, k) integer :: v(MPI_STATUS_SIZE, k)
#define SRC(s) s(MPI_SOURCE)
#define TAG(s) s(MPI_TAG)
#define SRC_I(s, i) s(MPI_SOURCE, i)
#define TAG_I(s, i) s(MPI_TAG, i)
#define VAL(h) h
#define IERR , ierr
#define IERR_FIRST ierr
#ifdef MPIF_H
#define FLAVOUR "mpif.h"
#else
#define FLAVOUR "use mpi"
#endif
#endif

program fortran_calls
#ifdef F08
  use mpi_f08
#elif defined(USE_MPI)
  use mpi
#endif
  implicit none
#ifdef MPIF_H
  include 'mpif.h'
#endif
  ! 1.2 MB of REAL, 2.4 MB of DOUBLE PRECISION: above every size MPIZip compresses from in the test.
  integer, parameter :: n = 300000, m = 1000
  integer :: rank, nranks, ierr, i, cnt, idx, r, failures
  logical :: flag, bottom
  character(len=16) :: arg
  COMM_T :: comm, dup, alone
  REQ_T :: reqs(2), req
  MSG_T :: msg
  DTYPE_T :: tsend
  STATUS_T :: st
  STATUSES_DECL(sts, 2)
  integer(kind=MPI_ADDRESS_KIND) :: addr(1)
  integer :: lens(1)
  integer(4), allocatable :: bits(:), got(:), got2(:), gathered(:)
  integer(8), allocatable :: dbits(:), dgot(:)
  double precision, allocatable :: x(:), y(:)
  real(4), allocatable :: a(:), b(:)

  failures = 0
  ierr = 0
  call get_command_argument(1, arg)
  bottom = arg /= "no-bottom"
  call MPI_Init(IERR_FIRST)
  comm = MPI_COMM_WORLD
  call MPI_Comm_rank(comm, rank IERR)
  call MPI_Comm_size(comm, nranks IERR)
  if (nranks /= 2) then
    print *, "fortran_calls needs 2 ranks"
    error stop 1
  end if
  allocate(bits(n), got(n), got2(n), dbits(n), dgot(n), x(n), y(n), a(n), b(n), gathered(2 * m))
  call fill32(bits, 1)
  call fill64(dbits, 2)

  ! 1. MPI_Send / MPI_Recv: the status (read by the library's own MPI_Get_count) and the bits.
  if (rank == 0) then
    call MPI_Send(bits, n, MPI_REAL, 1, 11, comm IERR)
  else
    got = 0
    call MPI_Recv(got, n, MPI_REAL, 0, 11, comm, st IERR)
    call MPI_Get_count(st, MPI_REAL, cnt IERR)
    call expect(SRC(st) == 0 .and. TAG(st) == 11 .and. cnt == n, "recv status")
    call expect(all(got == bits), "send/recv bits")
  end if

  ! 2. MPI_Probe with wildcards, then a receive sized from its status, MPI_STATUS_IGNORE.
  if (rank == 0) then
    call MPI_Send(dbits, n, MPI_DOUBLE_PRECISION, 1, 12, comm IERR)
  else
    call MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, st IERR)
    call MPI_Get_count(st, MPI_DOUBLE_PRECISION, cnt IERR)
    call expect(SRC(st) == 0 .and. TAG(st) == 12 .and. cnt == n, "probe status")
    dgot = 0
    call MPI_Recv(dgot, cnt, MPI_DOUBLE_PRECISION, SRC(st), TAG(st), comm, MPI_STATUS_IGNORE IERR)
    call expect(all(dgot == dbits), "probe/recv bits")
  end if

  ! 3. MPI_Iprobe (a LOGICAL flag) until the message is there; MPI_Isend and MPI_Wait.
  if (rank == 0) then
    call MPI_Isend(bits, n, MPI_REAL, 1, 13, comm, req IERR)
    call MPI_Wait(req, MPI_STATUS_IGNORE IERR)
    call expect(VAL(req) == VAL(MPI_REQUEST_NULL), "wait frees the request")
  else
    flag = .false.
    do while (.not. flag)
      call MPI_Iprobe(0, 13, comm, flag, st IERR)
    end do
    call expect(TAG(st) == 13, "iprobe status")
    got = 0
    call MPI_Recv(got, n, MPI_REAL, 0, 13, comm, MPI_STATUS_IGNORE IERR)
    call expect(all(got == bits), "iprobe/recv bits")
  end if

  ! 4. Matched probes: MPI_Mprobe and MPI_Mrecv; MPI_Improbe and MPI_Imrecv.
  if (rank == 0) then
    call MPI_Send(bits, n, MPI_REAL, 1, 14, comm IERR)
    call MPI_Send(bits, n, MPI_REAL, 1, 15, comm IERR)
  else
    call MPI_Mprobe(0, 14, comm, msg, st IERR)
    call MPI_Get_count(st, MPI_REAL, cnt IERR)
    call expect(cnt == n .and. TAG(st) == 14, "mprobe status")
    got = 0
    call MPI_Mrecv(got, cnt, MPI_REAL, msg, st IERR)
    call expect(VAL(msg) == VAL(MPI_MESSAGE_NULL), "mrecv consumes the message")
    call expect(all(got == bits) .and. TAG(st) == 14, "mprobe/mrecv bits")
    flag = .false.
    do while (.not. flag)
      call MPI_Improbe(0, 15, comm, flag, msg, st IERR)
    end do
    got = 0
    call MPI_Imrecv(got, n, MPI_REAL, msg, req IERR)
    call MPI_Wait(req, st IERR)
    call expect(all(got == bits) .and. TAG(st) == 15, "improbe/imrecv bits")
  end if

  ! 5. Two receives completed by MPI_Waitany (a 1-based index) and MPI_Waitall (statuses).
  if (rank == 0) then
    call MPI_Isend(bits, n, MPI_REAL, 1, 16, comm, reqs(1) IERR)
    call MPI_Isend(dbits, n, MPI_DOUBLE_PRECISION, 1, 17, comm, reqs(2) IERR)
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE IERR)
  else
    got = 0
    dgot = 0
    call MPI_Irecv(dgot, n, MPI_DOUBLE_PRECISION, 0, 17, comm, reqs(1) IERR)
    call MPI_Irecv(got, n, MPI_REAL, 0, 16, comm, reqs(2) IERR)
    call MPI_Waitany(2, reqs, idx, st IERR)
    call expect(idx == 1 .or. idx == 2, "waitany index")
    if (idx == 1 .or. idx == 2) then
      call expect(TAG(st) == 18 - idx, "waitany status")
      call expect(VAL(reqs(idx)) == VAL(MPI_REQUEST_NULL), "waitany frees its request")
    end if
    call MPI_Waitall(2, reqs, sts IERR)
    call expect(TAG_I(sts, 3 - idx) == 15 + idx .and. SRC_I(sts, 3 - idx) == 0, "waitall statuses")
    call expect(all(got == bits) .and. all(dgot == dbits), "waitany/waitall bits")
  end if

  ! 6. Persistent requests, started twice; MPI_Testall until both are done.
  if (rank == 0) then
    call MPI_Send_init(bits, n, MPI_REAL, 1, 19, comm, req IERR)
  else
    call MPI_Recv_init(got, n, MPI_REAL, 0, 19, comm, req IERR)
  end if
  do i = 1, 2
    got = 0
    call MPI_Start(req IERR)
    reqs(1) = req
    flag = .false.
    do while (.not. flag)
      call MPI_Testall(1, reqs, flag, sts IERR)
    end do
    if (rank == 1) call expect(all(got == bits) .and. TAG_I(sts, 1) == 19, "persistent bits")
  end do
  call MPI_Request_free(req IERR)

  ! 7. MPI_Sendrecv both ways at once.
  dgot = 0
  call MPI_Sendrecv(dbits, n, MPI_DOUBLE_PRECISION, 1 - rank, 20, dgot, n, MPI_DOUBLE_PRECISION, &
                    1 - rank, 20, comm, st IERR)
  call expect(all(dgot == dbits) .and. SRC(st) == 1 - rank, "sendrecv")

  ! 8. MPI_BOTTOM: a datatype of the buffer's absolute address, sent from and received at MPI_BOTTOM.
  if (bottom) then
    lens(1) = n
    if (rank == 0) then
      call MPI_Get_address(bits, addr(1) IERR)
    else
      got = 0
      call MPI_Get_address(got, addr(1) IERR)
    end if
    call MPI_Type_create_hindexed(1, lens, addr, MPI_REAL, tsend IERR)
    call MPI_Type_commit(tsend IERR)
    if (rank == 0) then
      call MPI_Send(MPI_BOTTOM, 1, tsend, 1, 21, comm IERR)
    else
      call MPI_Recv(MPI_BOTTOM, 1, tsend, 0, 21, comm, st IERR)
      call expect(all(got == bits), "MPI_BOTTOM bits")
    end if
    call MPI_Type_free(tsend IERR)
  end if

  ! 9. MPI_Allreduce, out of place and in place (MPI_IN_PLACE), sums that are exact in any order.
  do i = 1, n
    x(i) = dble(rank + 1) * dble(mod(i, 4093)) - 1000d0
    a(i) = real(rank + 1) * real(mod(i, 37))
  end do
  call MPI_Allreduce(x, y, n, MPI_DOUBLE_PRECISION, MPI_SUM, comm IERR)
  call MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE_PRECISION, MPI_SUM, comm IERR)
  call MPI_Allreduce(a, b, n, MPI_REAL, MPI_MAX, comm IERR)
  r = 0
  do i = 1, n
    if (y(i) /= 3d0 * dble(mod(i, 4093)) - 2000d0 .or. x(i) /= y(i)) r = r + 1
    if (b(i) /= 2.0 * real(mod(i, 37))) r = r + 1
  end do
  call expect(r == 0, "allreduce results")

  ! 10. MPI_Gather into rank 0 with MPI_IN_PLACE there.
  if (rank == 0) then
    gathered = -1
    gathered(1:m) = bits(1:m)
    call MPI_Gather(MPI_IN_PLACE, m, MPI_INTEGER, gathered, m, MPI_INTEGER, 0, comm IERR)
    call expect(all(gathered(1:m) == bits(1:m)) .and. all(gathered(m + 1:) == bits(m + 1:2 * m)), &
                "gather in place")
  else
    call MPI_Gather(bits(m + 1), m, MPI_INTEGER, gathered, m, MPI_INTEGER, 0, comm IERR)
  end if

  ! 11. Communicators made and freed from Fortran, and traffic on them.
  call MPI_Comm_dup(comm, dup IERR)
  call MPI_Comm_split(comm, rank, 0, alone IERR)
  call MPI_Comm_size(alone, cnt IERR)
  call expect(cnt == 1, "split")
  if (rank == 0) then
    call MPI_Ssend(bits, n, MPI_REAL, 1, 22, dup IERR)
  else
    got2 = 0
    call MPI_Recv(got2, n, MPI_REAL, 0, 22, dup, st IERR)
    call expect(all(got2 == bits), "dup bits")
  end if
  call MPI_Comm_free(alone IERR)
  call MPI_Comm_free(dup IERR)
  call expect(VAL(dup) == VAL(MPI_COMM_NULL), "comm_free")

  if (failures == 0) then
    print '(a, i0, a)', "fortran_calls " // FLAVOUR // " rank ", rank, ": ok"
  end if
  call MPI_Finalize(IERR_FIRST)
  if (failures /= 0) error stop 1

contains

#include "expect.inc"

  ! REAL bit patterns: smooth values (compressible, as real data is) with every 97th a raw 32-bit
  ! pattern from a generator (NaN payloads, infinities, subnormals, negative zero among them).
  subroutine fill32(v, seed)
    integer(4), intent(out) :: v(:)
    integer, intent(in) :: seed
    integer(8) :: s
    integer :: j
    s = seed
    do j = 1, size(v)
      s = xorshift(s)
      if (mod(j, 97) == 0) then
        v(j) = transfer(ishft(s, -20), v(j))
      else
        v(j) = transfer(real(sin(0.001d0 * j) * 100d0, 4), v(j))
      end if
    end do
    v(1) = int(z'7fc00001', 4)                   ! a quiet NaN with a payload
    v(2) = ishft(1, 31)                          ! -0.0
    v(3) = 1                                     ! the smallest subnormal
    v(4) = ior(int(z'7f800000', 4), ishft(1, 31)) ! -Inf
  end subroutine

  subroutine fill64(v, seed)
    integer(8), intent(out) :: v(:)
    integer, intent(in) :: seed
    integer(8) :: s
    integer :: j
    s = seed
    do j = 1, size(v)
      s = xorshift(s)
      if (mod(j, 89) == 0) then
        v(j) = ieor(s, ishft(s, 17))
      else
        v(j) = transfer(cos(0.0007d0 * j) * 1d3, v(j))
      end if
    end do
    v(1) = int(z'7ff8000000000001', 8)
    v(2) = ishft(1_8, 63)
  end subroutine

  integer(8) function xorshift(s)
    integer(8), intent(in) :: s
    xorshift = ieor(s, ishft(s, 13))
    xorshift = ieor(xorshift, ishft(xorshift, -7))
    xorshift = ieor(xorshift, ishft(xorshift, 17))
  end function

end program
