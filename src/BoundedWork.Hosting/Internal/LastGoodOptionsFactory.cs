using System.Globalization;
using System.Text.RegularExpressions;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Creates executor options as the standard factory does, with two differences. A value configuration cannot
/// convert (an unknown <c>RejectionPolicy</c> string, say) fails as an <see cref="OptionsValidationException"/>
/// naming the executor and the setting, not as a raw binder exception. And once an executor's options have been
/// valid, an invalid reload is logged and the last valid options are returned instead, so
/// <see cref="IOptionsMonitor{TOptions}"/> keeps working and the executor keeps its last good size.
/// </summary>
internal sealed partial class LastGoodOptionsFactory : IOptionsFactory<BoundedExecutorOptions>
{
    private const string BinderAssemblyName = "Microsoft.Extensions.Configuration.Binder";

    private readonly OptionsFactory<BoundedExecutorOptions> _inner;
    private readonly IConfigureOptions<BoundedExecutorOptions>[] _setups;
    private readonly IPostConfigureOptions<BoundedExecutorOptions>[] _postConfigures;
    private readonly IValidateOptions<BoundedExecutorOptions>[] _validations;
    private readonly IConfiguration? _configuration;
    private readonly LastGoodOptionsStore _store;
    private readonly ILogger _logger;

    public LastGoodOptionsFactory(
        IEnumerable<IConfigureOptions<BoundedExecutorOptions>> setups,
        IEnumerable<IPostConfigureOptions<BoundedExecutorOptions>> postConfigures,
        IEnumerable<IValidateOptions<BoundedExecutorOptions>> validations,
        LastGoodOptionsStore store,
        IServiceProvider services)
    {
        _setups = [.. setups];
        _postConfigures = [.. postConfigures];
        _validations = [.. validations];
        _inner = new OptionsFactory<BoundedExecutorOptions>(_setups, _postConfigures, _validations);
        _configuration = services.GetService<IConfiguration>();
        _store = store;
        _logger = (services.GetService<ILoggerFactory>() ?? NullLoggerFactory.Instance).CreateLogger<BoundedExecutor>();
    }

    public BoundedExecutorOptions Create(string name)
    {
        BoundedExecutorOptions options;
        try
        {
            options = _inner.Create(name);
        }
        catch (OptionsValidationException ex)
        {
            return LastGoodOrThrow(name, ex);
        }
        catch (InvalidOperationException ex) when (string.Equals(ex.Source, BinderAssemblyName, StringComparison.Ordinal))
        {
            return LastGoodOrThrow(name, new OptionsValidationException(name, typeof(BoundedExecutorOptions), CollectFailures(name, ex)));
        }

        _store.Remember(name, options);
        return options;
    }

    private BoundedExecutorOptions LastGoodOrThrow(string name, OptionsValidationException exception)
    {
        if (!_store.TryGet(name, out var lastGood))
        {
            throw exception;
        }

        _logger.InvalidReload(name, lastGood.WorkerCount, string.Join(" ", exception.Failures));
        return lastGood;
    }

    /// <summary>
    /// The binder stops at the first value it cannot convert, so the settings after it are never bound or validated.
    /// To report every bad setting at once, this runs the configuration again with the binder's failures caught,
    /// converts each value of the failed section on its own (reporting each that does not convert), and validates
    /// the result. Every failure message names the executor and the setting.
    /// </summary>
    private List<string> CollectFailures(string name, InvalidOperationException bindingFailure)
    {
        var failures = new List<string>();
        var options = new BoundedExecutorOptions();
        var failedSections = new HashSet<string>(StringComparer.OrdinalIgnoreCase);
        foreach (var setup in _setups)
        {
            try
            {
                if (setup is IConfigureNamedOptions<BoundedExecutorOptions> named)
                {
                    named.Configure(name, options);
                }
                else if (name == Options.DefaultName)
                {
                    setup.Configure(options);
                }
            }
            catch (InvalidOperationException ex) when (string.Equals(ex.Source, BinderAssemblyName, StringComparison.Ordinal))
            {
                if (FailedPath(ex) is { } path && path.LastIndexOf(':') is var colon and > 0)
                {
                    failedSections.Add(path[..colon]);
                }
                else
                {
                    failures.Add(DescribeBindingFailure(name, ex.Message));
                }
            }
        }

        var unconvertible = new HashSet<string>(StringComparer.Ordinal);
        foreach (var section in failedSections)
        {
            BindEachValue(name, _configuration?.GetSection(section), options, failures, unconvertible);
        }

        if (failures.Count == 0)
        {
            failures.Add(DescribeBindingFailure(name, bindingFailure.Message));
        }

        foreach (var postConfigure in _postConfigures)
        {
            postConfigure.PostConfigure(name, options);
        }

        foreach (var validation in _validations)
        {
            var result = validation.Validate(name, options);
            if (result.Failed)
            {
                // A setting that could not be converted keeps its default: do not report that default as well. A
                // failure is left out only when it names such a setting as a word of its own, so the failures of
                // other settings whose names contain it (MaxWorkerCount beside WorkerCount) are still reported.
                failures.AddRange(result.Failures.Where(failure => !unconvertible.Any(setting => NamesSetting(failure, setting))));
            }
        }

        return failures;
    }

    /// <summary>Converts each runtime value of a failed section on its own, as the binder would, collecting every failure.</summary>
    private static void BindEachValue(string name, IConfigurationSection? section, BoundedExecutorOptions options, List<string> failures, HashSet<string> unconvertible)
    {
        if (section is null)
        {
            return;
        }

        foreach (var child in section.GetChildren())
        {
            if (child.Value is not { } value)
            {
                continue;
            }

            var converted = child.Key.ToUpperInvariant() switch
            {
                "WORKERCOUNT" => TryInt(value, v => options.WorkerCount = v),
                "MAXWORKERCOUNT" => TryInt(value, v => options.MaxWorkerCount = v),
                "QUEUECAPACITY" => TryInt(value, v => options.QueueCapacity = v),
                "REJECTIONPOLICY" => TryPolicy(value, v => options.RejectionPolicy = v),
                "WAITTIMEOUT" => TryTimeSpan(value, v => options.WaitTimeout = v),
                "DISPOSETIMEOUT" => TryTimeSpan(value, v => options.DisposeTimeout = v),
                "SLOWITEMTHRESHOLD" => TryTimeSpan(value, v => options.SlowItemThreshold = v),
                "QUEUEWAITTHRESHOLD" => TryTimeSpan(value, v => options.QueueWaitThreshold = v),
                "FLOWEXECUTIONCONTEXT" => TryBool(value, v => options.FlowExecutionContext = v),
                _ => (bool?)null,
            };
            if (converted == false)
            {
                var setting = typeof(BoundedExecutorOptions).GetProperties().First(p => string.Equals(p.Name, child.Key, StringComparison.OrdinalIgnoreCase));
                unconvertible.Add(setting.Name);
                failures.Add(DescribeBindingFailure(name,
                    $"Failed to convert configuration value '{value}' at '{child.Path}' to type '{setting.PropertyType.FullName}'."));
            }
        }

        static bool TryInt(string value, Action<int> set)
        {
            var ok = int.TryParse(value, NumberStyles.Integer, CultureInfo.InvariantCulture, out var parsed);
            if (ok)
            {
                set(parsed);
            }

            return ok;
        }

        static bool TryTimeSpan(string value, Action<TimeSpan> set)
        {
            var ok = TimeSpan.TryParse(value, CultureInfo.InvariantCulture, out var parsed);
            if (ok)
            {
                set(parsed);
            }

            return ok;
        }

        static bool TryBool(string value, Action<bool> set)
        {
            var ok = bool.TryParse(value, out var parsed);
            if (ok)
            {
                set(parsed);
            }

            return ok;
        }

        static bool TryPolicy(string value, Action<RejectionPolicy> set)
        {
            var ok = RejectionPolicyConverter.TryParse(value, out var parsed);
            if (ok)
            {
                set(parsed);
            }

            return ok;
        }
    }

    /// <summary>Whether <paramref name="failure"/> mentions <paramref name="setting"/> as a whole word.</summary>
    private static bool NamesSetting(string failure, string setting)
    {
        for (var at = failure.IndexOf(setting, StringComparison.Ordinal); at >= 0; at = failure.IndexOf(setting, at + 1, StringComparison.Ordinal))
        {
            var end = at + setting.Length;
            if ((at == 0 || !char.IsLetterOrDigit(failure[at - 1])) && (end == failure.Length || !char.IsLetterOrDigit(failure[end])))
            {
                return true;
            }
        }

        return false;
    }

    private static string? FailedPath(InvalidOperationException exception) =>
        FailedPathPattern().Match(exception.Message) is { Success: true } match ? match.Groups["path"].Value : null;

    [GeneratedRegex(" at '(?<path>[^']+)' to type ", RegexOptions.CultureInvariant)]
    private static partial Regex FailedPathPattern();

    private static string DescribeBindingFailure(string name, string binderMessage)
    {
        // The binder's message names the configuration path (…:RejectionPolicy) and the value it could not convert.
        var message = $"Executor '{name}': {binderMessage}";
        if (binderMessage.Contains(nameof(RejectionPolicy), StringComparison.Ordinal))
        {
            message += $" RejectionPolicy must be one of {RejectionPolicyConverter.Names}.";
        }

        return message;
    }
}
