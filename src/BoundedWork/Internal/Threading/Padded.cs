using System.Runtime.InteropServices;

namespace BoundedWork.Internal;

/// <summary>
/// A 64-bit value alone on its cache line(s), so that submitters and workers hammering it do not also slow
/// down whatever the runtime would have laid out next to it (false sharing).
/// </summary>
[StructLayout(LayoutKind.Explicit, Size = 128)]
internal struct PaddedInt64
{
    [FieldOffset(64)]
    public long Value;
}

/// <summary>A 32-bit value alone on its cache line(s); see <see cref="PaddedInt64"/>.</summary>
[StructLayout(LayoutKind.Explicit, Size = 128)]
internal struct PaddedInt32
{
    [FieldOffset(64)]
    public int Value;
}
