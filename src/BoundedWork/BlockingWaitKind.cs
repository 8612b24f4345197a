namespace BoundedWork;

/// <summary>What a caller was blocking on when it blocked a thread waiting for an executor.</summary>
public enum BlockingWaitKind
{
    /// <summary>A synchronous submit under the Wait policy blocked until the full queue had room.</summary>
    WaitForRoom = 0,

    /// <summary>A synchronous submit-and-wait blocked until the item had run on a worker.</summary>
    SubmitAndWait = 1,
}
