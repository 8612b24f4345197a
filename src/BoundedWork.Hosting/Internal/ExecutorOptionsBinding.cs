using System.Diagnostics.CodeAnalysis;
using System.Reflection;
using System.Runtime.CompilerServices;
using Microsoft.Extensions.Configuration;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Binds executor options from configuration with the configuration binder, one value at a time, so that every value
/// it cannot convert is reported (with the binder's own message, which names the path and the value), not only the
/// first: the binder stops at its first failure and throws, before any validation runs.
/// </summary>
/// <remarks>
/// A value that does not convert leaves its setting at the value it had; its failure is attached to the options
/// instance being built and reported by <see cref="BoundedExecutorOptionsValidator"/>, which leaves out the range
/// failures that stand-in value would cause. Binding never throws, so a bad reload cannot throw out of the
/// configuration reload (on a file watcher's thread, that would end the process).
/// </remarks>
internal static class ExecutorOptionsBinding
{
    public const string RequiresUnreferencedCodeMessage = "Binding executor options from configuration uses the configuration binder, which needs the options' members to be preserved.";

    public const string RequiresDynamicCodeMessage = "Binding executor options from configuration uses the configuration binder, which may need to generate code at run time.";

    private static readonly ConditionalWeakTable<BoundedExecutorOptions, List<BindingFailure>> s_failures = [];

    private static readonly Dictionary<string, PropertyInfo> s_properties =
        typeof(BoundedExecutorOptions).GetProperties(BindingFlags.Public | BindingFlags.Instance)
            .Where(static property => property.CanWrite)
            .ToDictionary(static property => property.Name, StringComparer.OrdinalIgnoreCase);

    /// <summary>Binds each value of <paramref name="section"/> that names a setting, as the binder would.</summary>
    [RequiresUnreferencedCode(RequiresUnreferencedCodeMessage)]
    [RequiresDynamicCode(RequiresDynamicCodeMessage)]
    public static void Bind(IConfiguration section, BoundedExecutorOptions options, Action<BinderOptions>? configureBinder)
    {
        var binderOptions = new BinderOptions();
        configureBinder?.Invoke(binderOptions);
        foreach (var child in section.GetChildren())
        {
            if (!s_properties.TryGetValue(child.Key, out var property))
            {
                if (binderOptions.ErrorOnUnknownConfiguration)
                {
                    Add(options, new BindingFailure(child.Key, $"'{child.Path}' is not a setting of {nameof(BoundedExecutorOptions)}."));
                }

                continue;
            }

            object? value;
            try
            {
                value = child.Get(property.PropertyType, configureBinder);
            }
            catch (InvalidOperationException ex)
            {
                var message = property.PropertyType == typeof(RejectionPolicy)
                    ? $"{ex.Message} RejectionPolicy must be one of {RejectionPolicyConverter.Names}."
                    : ex.Message;
                Add(options, new BindingFailure(property.Name, message));
                continue;
            }

            if (property.PropertyType == typeof(FairShareSettings) && UnconvertedWeight(child) is { } weightError)
            {
                Add(options, new BindingFailure(property.Name, weightError));
                continue;
            }

            if (value is not null)
            {
                property.SetValue(options, value);
            }
        }
    }

    /// <summary>
    /// The binder skips a dictionary entry whose value does not convert, without a word; a weight that is not a whole
    /// number is reported here instead (naming its path), not bound as if the tenant had no weight of its own.
    /// </summary>
    private static string? UnconvertedWeight(IConfigurationSection fairShare)
    {
        foreach (var weight in fairShare.GetSection(nameof(FairShareSettings.Weights)).GetChildren())
        {
            if (weight.Value is { } text && !int.TryParse(text, System.Globalization.NumberStyles.Integer, System.Globalization.CultureInfo.InvariantCulture, out _))
            {
                return $"Failed to convert configuration value '{text}' at '{weight.Path}' to type 'System.Int32': a tenant's weight is a whole number between 1 and {FairShareSettings.MaxWeight}.";
            }
        }

        return null;
    }

    /// <summary>Gets the values that did not convert while <paramref name="options"/> was bound.</summary>
    public static IReadOnlyList<BindingFailure> GetFailures(BoundedExecutorOptions options) =>
        s_failures.TryGetValue(options, out var failures) ? failures : [];

    private static void Add(BoundedExecutorOptions options, BindingFailure failure)
    {
        var failures = s_failures.GetOrCreateValue(options);
        lock (failures)
        {
            failures.Add(failure);
        }
    }
}

/// <summary>A configuration value that did not convert: the setting and the binder's message.</summary>
internal readonly record struct BindingFailure(string Setting, string Message);
