using System.ComponentModel;
using System.Globalization;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Reads a <see cref="RejectionPolicy"/> from configuration text: exactly one of the five names, in any case, and
/// nothing else. The standard enum conversion also takes numbers (<c>"3"</c>) and comma-separated flags
/// (<c>"CallerRuns,Discard"</c>, which combine to <see cref="RejectionPolicy.DiscardOldest"/>), so a typo could start an
/// executor with a policy nobody chose.
/// </summary>
/// <remarks>
/// The configuration binder converts through <see cref="TypeDescriptor.GetConverter(Type)"/>; <see cref="Register"/>
/// makes this the converter of <see cref="RejectionPolicy"/> before any executor's options are bound. A value it
/// refuses fails binding, and start-up (or the reload) reports it with the setting's path.
/// </remarks>
internal sealed class RejectionPolicyConverter : EnumConverter
{
    private static int s_registered;

    public RejectionPolicyConverter()
        : base(typeof(RejectionPolicy))
    {
    }

    /// <summary>Gets the accepted names, for messages.</summary>
    public static string Names { get; } = string.Join(", ", Enum.GetNames<RejectionPolicy>());

    /// <summary>Makes this the converter the configuration binder uses for <see cref="RejectionPolicy"/>; once per process.</summary>
    public static void Register()
    {
        if (Interlocked.Exchange(ref s_registered, 1) == 0)
        {
            TypeDescriptor.AddAttributes(typeof(RejectionPolicy), new TypeConverterAttribute(typeof(RejectionPolicyConverter)));
        }
    }

    /// <summary>Parses exactly one policy name, ignoring case; no numbers, no combinations, no surrounding spaces.</summary>
    public static bool TryParse(string text, out RejectionPolicy policy)
    {
        foreach (var name in Enum.GetNames<RejectionPolicy>())
        {
            if (string.Equals(text, name, StringComparison.OrdinalIgnoreCase))
            {
                policy = Enum.Parse<RejectionPolicy>(name);
                return true;
            }
        }

        policy = default;
        return false;
    }

    public override object? ConvertFrom(ITypeDescriptorContext? context, CultureInfo? culture, object value) =>
        value is string text
            ? TryParse(text, out var policy) ? policy : throw new FormatException($"'{text}' is not a rejection policy: use one of {Names}.")
            : base.ConvertFrom(context, culture, value);
}
